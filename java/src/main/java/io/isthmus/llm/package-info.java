/**
 * Llama-family language models (Hugging Face checkpoints) on isthmus kernels: load a model folder
 * onto a device, generate from batches of prompts, stream tokens.
 *
 * <p>The model runs in the isthmus runtime ({@code isthmus.llm}, in the same process); every
 * generation step is one call into it, made from a thread the runtime started. Start at
 * {@link io.isthmus.llm.LlamaModel#load}; the command line is {@link io.isthmus.llm.Generate}.
 *
 * <pre>{@code
 * Device dev = Isthmus.get().device();
 * try (LlamaModel model = LlamaModel.load(Path.of("Llama-3.2-1B"), dev)) {
 *     GenerationResult r = model.generate(List.of(new int[] {128000, 791, 6864}),
 *             GenerationConfig.builder().maxNewTokens(16).build());
 *     int[] ids = r.tokens(0);
 * }
 * }</pre>
 */
package io.isthmus.llm;

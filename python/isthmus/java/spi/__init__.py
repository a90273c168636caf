"""The Python side of the Java SPI (``io.isthmus.spi``): JPype proxies over the runtime, one
module per concern.

- :mod:`.proxy`: the error mapping every SPI method goes through, and the table of which Python
  class implements which Java interface (read by the completeness test);
- :mod:`.buffers`: ``BufferHandle`` and the conversion of Java arguments;
- :mod:`.devices`: ``DeviceHandle``;
- :mod:`.kernels`: ``KernelHandle`` (a compiled kernel on a grid);
- :mod:`.ops`: library ops in one crossing (``Runtime.op``, ``OpHandle``) and the op table;
- :mod:`.launches`: prepared launches, graphs and fused expressions;
- :mod:`.runtime`: ``Runtime``, the object attached to the JVM;
- :mod:`.tuning`: the tuner for ``io.isthmus.Tuner`` and ``TunableKernel`` (``TuneRun``).
- :mod:`.weights`: safetensors checkpoints loaded for ``io.isthmus.SafeTensors``;
- :mod:`.llm`: ``isthmus.llm`` models, generations and tokenizers for ``io.isthmus.llm``.

Nothing here touches the JVM at import: the proxies are declared ``deferred``.
"""

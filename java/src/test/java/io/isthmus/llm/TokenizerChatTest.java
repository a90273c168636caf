package io.isthmus.llm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.isthmus.FormatException;
import io.isthmus.InvalidArgumentException;
import io.isthmus.Isthmus;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link Tokenizer#applyChatTemplate} and {@link Tokenizer#encodeChat} on the real runtime (the
 * {@code tokenizers} and {@code jinja2} packages): a word-level tokenizer.json written here, with Meta
 * Llama 3 Instruct's chat template verbatim.
 */
class TokenizerChatTest {
    static final String[] WORDS = {"hello", "world", "the", "cat", "sat", "on", "mat", "a", "dog"};
    static final String[] SPECIAL = {"<unk>", "<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>",
        "<|end_header_id|>"};
    /** Meta-Llama-3-8B-Instruct's tokenizer_config.json chat_template. */
    static final String LLAMA3 = "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
            + "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + "
            + "'<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}"
            + "{{ content }}{% endfor %}{% if add_generation_prompt %}"
            + "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";

    @TempDir
    Path tmp;

    @BeforeEach
    void attached() {
        assumeTrue(Isthmus.isAttached(), "needs the isthmus runtime: run through tests/crosslang or `isthmus java`");
    }

    private static String quote(String s) {
        return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n") + "\"";
    }

    /** A word-level tokenizer.json ("<|begin_of_text|>" the BOS, id 1) and a tokenizer_config.json. */
    private Path folder(String name, String template) throws IOException {
        Path dir = Files.createDirectories(tmp.resolve(name));
        StringBuilder added = new StringBuilder();
        StringBuilder vocab = new StringBuilder();
        for (int i = 0; i < SPECIAL.length + WORDS.length; i++) {
            String t = i < SPECIAL.length ? SPECIAL[i] : WORDS[i - SPECIAL.length];
            vocab.append(i == 0 ? "" : ",").append(quote(t)).append(':').append(i);
            if (i < SPECIAL.length) {
                added.append(i == 0 ? "" : ",").append("{\"id\":").append(i).append(",\"content\":").append(quote(t))
                        .append(",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false,"
                                + "\"special\":true}");
            }
        }
        Files.writeString(dir.resolve("tokenizer.json"), "{\"version\":\"1.0\",\"added_tokens\":[" + added
                + "],\"pre_tokenizer\":{\"type\":\"WhitespaceSplit\"},\"post_processor\":{\"type\":\"TemplateProcessing\","
                + "\"single\":[{\"SpecialToken\":{\"id\":\"<|begin_of_text|>\",\"type_id\":0}},{\"Sequence\":{\"id\":\"A\","
                + "\"type_id\":0}}],\"pair\":[{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}],\"special_tokens\":"
                + "{\"<|begin_of_text|>\":{\"id\":\"<|begin_of_text|>\",\"ids\":[1],\"tokens\":[\"<|begin_of_text|>\"]}}},"
                + "\"model\":{\"type\":\"WordLevel\",\"vocab\":{" + vocab + "},\"unk_token\":\"<unk>\"}}",
                StandardCharsets.UTF_8);
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"bos_token\":\"<|begin_of_text|>\",\"eos_token\":"
                + "\"<|eot_id|>\"" + (template == null ? "" : ",\"chat_template\":" + quote(template)) + "}",
                StandardCharsets.UTF_8);
        return dir;
    }

    private static List<Map<String, String>> conversation(Random rng) {
        List<Map<String, String>> out = new ArrayList<>();
        for (String role : new String[] {"system", "user", "assistant", "user"}) {
            StringBuilder c = new StringBuilder();
            for (int i = 0, n = 1 + rng.nextInt(4); i < n; i++) {
                c.append(i == 0 ? "" : " ").append(WORDS[rng.nextInt(WORDS.length)]);
            }
            out.add(Map.of("role", role, "content", c.toString()));
        }
        return out;
    }

    @Test
    void llama3TemplateRendersAsTransformers() throws IOException {
        Tokenizer tok = Tokenizer.load(folder("llama", LLAMA3));
        List<Map<String, String>> msgs = conversation(new Random());
        StringBuilder body = new StringBuilder("<|begin_of_text|>");
        for (Map<String, String> m : msgs) {
            body.append("<|start_header_id|>").append(m.get("role")).append("<|end_header_id|>\n\n")
                    .append(m.get("content")).append("<|eot_id|>");
        }
        String prompt = body + "<|start_header_id|>assistant<|end_header_id|>\n\n";
        assertEquals(body.toString(), tok.applyChatTemplate(msgs, false));
        assertEquals(prompt, tok.applyChatTemplate(msgs));
        assertEquals(prompt, tok.applyChatTemplate(msgs, true));
        int[] ids = tok.encodeChat(msgs);
        assertArrayEquals(tok.encode(prompt, false), ids);
        assertEquals(1, ids[0]);
        assertEquals(1, Arrays.stream(ids).filter(i -> i == 1).count(), "one BOS: " + Arrays.toString(ids));
        assertArrayEquals(tok.encode(body.toString(), false), tok.encodeChat(msgs, false));
    }

    @Test
    void badConversationsAndTemplatesAreTypedErrors() throws IOException {
        Tokenizer tok = Tokenizer.load(folder("llama", LLAMA3));
        List<Map<String, String>> msgs = new ArrayList<>(List.of(Map.of("role", "user", "content", "cat")));
        Map<String, String> noContent = new HashMap<>();
        noContent.put("role", "user");
        msgs.add(noContent);
        InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> tok.applyChatTemplate(msgs));
        assertTrue(e.getMessage().contains("messages[1]"), e.getMessage());
        assertThrows(InvalidArgumentException.class, () -> tok.encodeChat(null));

        Tokenizer plain = Tokenizer.load(folder("plain", null));
        e = assertThrows(InvalidArgumentException.class, () -> plain.applyChatTemplate(msgs.subList(0, 1)));
        assertTrue(e.getMessage().contains("no chat template"), e.getMessage());

        Tokenizer strict = Tokenizer.load(folder("strict", "{% if messages[0]['role'] != 'system' %}"
                + "{{ raise_exception('Conversations must start with a system message') }}{% endif %}ok"));
        e = assertThrows(InvalidArgumentException.class, () -> strict.applyChatTemplate(msgs.subList(0, 1)));
        assertTrue(e.getMessage().contains("must start with a system message"), e.getMessage());

        Tokenizer broken = Tokenizer.load(folder("broken", "{% for m in messages %}{{ m.content }"));
        FormatException f = assertThrows(FormatException.class, () -> broken.applyChatTemplate(msgs.subList(0, 1)));
        assertTrue(f.getMessage().contains("tokenizer_config.json"), f.getMessage());
    }
}

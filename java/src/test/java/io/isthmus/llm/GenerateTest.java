package io.isthmus.llm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The command line's arguments (no runtime needed: every case here fails before loading a model,
 * or needs none) and the .npy writer; the runs on a model are in tests/crosslang/test_llm_crosslang.py.
 */
class GenerateTest {
    @TempDir
    Path tmp;

    /** Exit status, stdout, stderr of one run. */
    record Run(int status, String out, String err) {
    }

    static Run run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = Generate.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(status, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private void assertUsageError(String expected, String... args) {
        Run r = run(args);
        assertEquals(2, r.status(), r.toString());
        assertEquals("", r.out());
        assertEquals(1, r.err().lines().count(), "one line: " + r.err());
        assertTrue(r.err().startsWith("Generate: ") && r.err().contains(expected), r.err());
    }

    @Test
    void badArgumentsAreOneLineAndStatus2() throws IOException {
        String dir = tmp.toString();
        assertUsageError("--model DIR is required", "--prompt-ids", "1,2");
        assertUsageError("no prompts", "--model", dir);
        assertUsageError("'1,x' is not a comma-separated list", "--model", dir, "--prompt-ids", "1,x");
        assertUsageError("'-1' is not a comma-separated list", "--model", dir, "--prompt-ids", "-1");
        assertUsageError("unknown option --frobnicate", "--model", dir, "--frobnicate", "3");
        assertUsageError("--max-new-tokens needs an integer >= 1, got '0'", "--model", dir, "--prompt-ids", "1",
                "--max-new-tokens", "0");
        assertUsageError("--max-new-tokens needs an integer >= 0, got 'many'", "--model", dir, "--prompt-ids", "1",
                "--max-new-tokens", "many");
        assertUsageError("--top-p needs a number in (0, 1], got '1.5'", "--model", dir, "--prompt-ids", "1",
                "--top-p", "1.5");
        assertUsageError("--temperature needs a number >= 0", "--model", dir, "--prompt-ids", "1", "--temperature", "-2");
        assertUsageError("--seed needs an integer >= 0", "--model", dir, "--prompt-ids", "1", "--seed", "x");
        assertUsageError("--max-new-tokens needs a value", "--model", dir, "--prompt-ids", "1", "--max-new-tokens");
        assertUsageError("unexpected argument 'hello'", "--model", dir, "hello");
        assertUsageError("cannot read --batch-file", "--model", dir, "--batch-file", tmp.resolve("none.txt").toString());
        assertUsageError("the folder", "--model", dir, "--prompt-ids", "1", "--dump-logits",
                tmp.resolve("no/such/x.npy").toString());
        assertUsageError("is not a folder", "--model", tmp.resolve("absent").toString(), "--prompt-ids", "1");
        assertUsageError("has no tokenizer.json", "--model", dir, "--prompt", "hello");
    }

    @Test
    void helpPrintsTheUsage() {
        Run r = run("--help");
        assertEquals(0, r.status());
        assertTrue(r.out().startsWith("usage: isthmus java -cp ARTIFACT io.isthmus.llm.Generate --model DIR"), r.out());
        assertTrue(r.out().contains("[--chat"), r.out());
    }

    @Test
    void chatIsAnOptInFlagWithoutAValue() throws Exception {
        Generate.Args a = Generate.parse(new String[] {"--model", "m", "--prompt", "hi", "--chat", "--prompt", "yo"});
        assertTrue(a.chat);
        assertEquals(2, a.prompts.size());
        assertTrue(!Generate.parse(new String[] {"--model", "m", "--prompt", "hi"}).chat);
    }

    @Test
    void argumentsParseIntoOneSequenceEach() throws Exception {
        Path batch = Files.writeString(tmp.resolve("batch.txt"), "5, 6,7\n\nsome text\n9\n");
        Generate.Args a = Generate.parse(new String[] {"--model", "m", "--prompt-ids", "1,2,3", "--prompt", "hi there",
            "--prompt-ids=4", "--batch-file", batch.toString(), "--top-k", "5"});
        assertEquals(6, a.prompts.size());
        assertArrayEquals(new int[] {1, 2, 3}, a.prompts.get(0).ids());
        assertEquals("hi there", a.prompts.get(1).text());
        assertArrayEquals(new int[] {4}, a.prompts.get(2).ids());
        assertArrayEquals(new int[] {5, 6, 7}, a.prompts.get(3).ids());
        assertEquals("some text", a.prompts.get(4).text());
        assertArrayEquals(new int[] {9}, a.prompts.get(5).ids());
        GenerationConfig sampled = a.config();
        assertEquals(1.0, sampled.temperature());
        assertEquals(5, sampled.topK());
        Generate.Args zero = Generate.parse(new String[] {"--model", "m", "--prompt-ids", "1", "--top-k", "5",
            "--temperature", "0"});
        assertTrue(zero.config().greedy());
        assertTrue(Generate.parse(new String[] {"--model", "m", "--prompt-ids", "1"}).config().greedy());
        assertEquals("a\\nb\\tc\\\\", Generate.escape("a\nb\tc\\"));
    }

    @Test
    void npyFilesHaveNumpysHeaderAndLittleEndianFloats() throws IOException {
        Random rng = new Random();
        for (int[] shape : new int[][] {{1, 1}, {3, 517}, {2, 12345}}) {
            float[] data = new float[shape[0] * shape[1]];
            for (int i = 0; i < data.length; i++) {
                data[i] = (float) rng.nextGaussian();
            }
            Path f = tmp.resolve("x.npy");
            Npy.writeFloat32(f, data, shape[0], shape[1]);
            byte[] bytes = Files.readAllBytes(f);
            ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
            assertEquals((byte) 0x93, b.get(0));
            assertEquals("NUMPY", new String(bytes, 1, 5, StandardCharsets.US_ASCII));
            int headerLength = Short.toUnsignedInt(b.getShort(8));
            assertEquals(0, (10 + headerLength) % 64);
            String header = new String(bytes, 10, headerLength, StandardCharsets.US_ASCII);
            assertTrue(header.startsWith("{'descr': '<f4', 'fortran_order': False, 'shape': (" + shape[0] + ", "
                    + shape[1] + "), }") && header.endsWith("\n"), header);
            assertEquals(10 + headerLength + 4L * data.length, bytes.length);
            b.position(10 + headerLength);
            float[] back = new float[data.length];
            b.asFloatBuffer().get(back);
            assertArrayEquals(data, back);
        }
    }
}

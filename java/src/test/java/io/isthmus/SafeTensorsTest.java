package io.isthmus;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * SafeTensors.load: files this test writes itself (8 bytes of little-endian header length, the
 * JSON header, the data) come back byte for byte on the device, one file, a sharded folder; a
 * damaged file or a refused dtype is its typed exception and leaves no buffer behind.
 */
class SafeTensorsTest {
    @TempDir
    Path dir;

    @BeforeAll
    static void attached() {
        Attached.requireAttached();
    }

    /** One tensor to write: safetensors dtype, shape, bytes. */
    record Tensor(String dtype, long[] shape, byte[] data) {
    }

    private static final Map<String, Integer> SIZES = Map.of("F32", 4, "F16", 2, "BF16", 2, "I32", 4, "I64", 8,
            "U8", 1, "I8", 1);

    static Tensor random(Random rng, String dtype, long... shape) {
        long n = 1;
        for (long s : shape) {
            n *= s;
        }
        byte[] data = new byte[(int) n * SIZES.get(dtype)];
        rng.nextBytes(data);
        return new Tensor(dtype, shape, data);
    }

    static Path write(Path path, Map<String, Tensor> tensors) throws IOException {
        StringBuilder json = new StringBuilder("{\"__metadata__\":{\"format\":\"pt\"}");
        long at = 0;
        for (Map.Entry<String, Tensor> e : tensors.entrySet()) {
            Tensor t = e.getValue();
            StringBuilder shape = new StringBuilder();
            for (long s : t.shape()) {
                shape.append(shape.length() == 0 ? "" : ",").append(s);
            }
            json.append(",\"").append(e.getKey()).append("\":{\"dtype\":\"").append(t.dtype())
                    .append("\",\"shape\":[").append(shape).append("],\"data_offsets\":[").append(at).append(',')
                    .append(at + t.data().length).append("]}");
            at += t.data().length;
        }
        byte[] header = json.append('}').toString().getBytes(StandardCharsets.UTF_8);
        ByteBuffer out = ByteBuffer.allocate(8 + header.length + (int) at).order(ByteOrder.LITTLE_ENDIAN);
        out.putLong(header.length).put(header);
        tensors.values().forEach(t -> out.put(t.data()));
        return Files.write(path, out.array());
    }

    static void assertLoaded(SafeTensors weights, Map<String, Tensor> expected) {
        assertEquals(new ArrayList<>(expected.keySet()), weights.names());
        for (Map.Entry<String, Tensor> e : expected.entrySet()) {
            DeviceBuffer b = weights.get(e.getKey());
            Tensor t = e.getValue();
            assertArrayEquals(t.shape(), b.shape(), e.getKey());
            assertEquals(Map.of("F32", DType.FLOAT32, "F16", DType.FLOAT16, "BF16", DType.BFLOAT16, "I32", DType.INT32,
                    "I64", DType.INT64, "U8", DType.UINT8).get(t.dtype()), b.dtype(), e.getKey());
            ByteBuffer back = ByteBuffer.allocateDirect(t.data().length).order(ByteOrder.nativeOrder());
            if (t.data().length > 0) {
                b.copyTo(back);
            }
            byte[] got = new byte[t.data().length];
            back.get(got);
            assertArrayEquals(t.data(), got, e.getKey());
        }
    }

    static Map<String, Tensor> everyDtype(Random rng, String prefix) {
        Map<String, Tensor> t = new LinkedHashMap<>();
        t.put(prefix + "f32", random(rng, "F32", 13, 17));
        t.put(prefix + "bf16", random(rng, "BF16", 3, 5, 7));
        t.put(prefix + "f16", random(rng, "F16", 129));
        t.put(prefix + "i32", random(rng, "I32"));      // 0-d
        t.put(prefix + "i64", random(rng, "I64", 2, 0)); // empty
        t.put(prefix + "u8", random(rng, "U8", 1001));
        return t;
    }

    @Test
    void everyDtypeComesBackByteForByte() throws IOException {
        Random rng = new Random();
        Map<String, Tensor> tensors = everyDtype(rng, "w.");
        Path file = write(dir.resolve("one.safetensors"), tensors);
        long before = Isthmus.get().liveBuffers();
        SafeTensors weights = SafeTensors.load(file, Isthmus.get().device());
        try (weights) {
            assertLoaded(weights, tensors);
            assertEquals(tensors.size(), weights.size());
            assertTrue(weights.contains("w.bf16"));
            assertFalse(weights.contains("nope"));
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> weights.get("nope"));
            assertTrue(e.getMessage().contains("no tensor 'nope'"), e.getMessage());
            assertEquals(before + tensors.size(), Isthmus.get().liveBuffers());
        }
        assertEquals(before, Isthmus.get().liveBuffers());
        weights.close();
        assertThrows(ClosedBufferException.class, () -> weights.get("w.f32"));
    }

    @Test
    void aShardedFolderLoadsThroughItsIndex() throws IOException {
        Random rng = new Random();
        Map<String, Tensor> all = new LinkedHashMap<>();
        StringBuilder map = new StringBuilder();
        for (int i = 1; i <= 3; i++) {
            String shard = "model-0000" + i + "-of-00003.safetensors";
            Map<String, Tensor> tensors = everyDtype(rng, "s" + i + ".");
            write(dir.resolve(shard), tensors);
            all.putAll(tensors);
            for (String name : tensors.keySet()) {
                map.append(map.length() == 0 ? "" : ",").append('"').append(name).append("\":\"").append(shard)
                        .append('"');
            }
        }
        Files.writeString(dir.resolve("model.safetensors.index.json"), "{\"weight_map\":{" + map + "}}");
        try (SafeTensors weights = SafeTensors.load(dir, Isthmus.get().device())) {
            assertLoaded(weights, all);
        }
    }

    @Test
    void damagedFilesAreTypedExceptionsAndLeaveNothingAllocated() throws IOException {
        Device dev = Isthmus.get().device();
        long before = Isthmus.get().liveBuffers();
        Map<String, Tensor> tensors = everyDtype(new Random(), "");
        Path good = write(dir.resolve("good.safetensors"), tensors);
        byte[] bytes = Files.readAllBytes(good);

        Path truncated = Files.write(dir.resolve("truncated.safetensors"), Arrays.copyOf(bytes, bytes.length - 3));
        FormatException e = assertThrows(FormatException.class, () -> SafeTensors.load(truncated, dev));
        assertTrue(e.getMessage().contains("past the end of the data"), e.getMessage());
        assertEquals("isthmus.errors.FormatError", e.pythonType());

        byte[] notJson = bytes.clone();
        notJson[8] = '[';
        Path garbled = Files.write(dir.resolve("garbled.safetensors"), notJson);
        e = assertThrows(FormatException.class, () -> SafeTensors.load(garbled, dev));
        assertTrue(e.getMessage().contains("header is not JSON"), e.getMessage());

        Map<String, Tensor> refused = new LinkedHashMap<>(tensors);
        refused.put("q", random(new Random(), "I8", 4));
        Path int8 = write(dir.resolve("int8.safetensors"), refused);
        UnsupportedDtypeException u = assertThrows(UnsupportedDtypeException.class, () -> SafeTensors.load(int8, dev));
        assertTrue(u.getMessage().contains("tensor 'q' has dtype 'I8'"), u.getMessage());

        InvalidArgumentException none = assertThrows(InvalidArgumentException.class,
                () -> SafeTensors.load(dir.resolve("absent"), dev));
        assertTrue(none.getMessage().contains("no such file or folder"), none.getMessage());
        assertEquals(before, Isthmus.get().liveBuffers());
    }

    @Test
    void closingTheLoadedBuffersOneByOneIsAllowed() throws IOException {
        Map<String, Tensor> tensors = everyDtype(new Random(), "");
        Path file = write(dir.resolve("x.safetensors"), tensors);
        long before = Isthmus.get().liveBuffers();
        try (SafeTensors weights = SafeTensors.load(file, Isthmus.get().device())) {
            List<String> names = weights.names();
            weights.get(names.get(0)).close();  // the buffer is freed; closing the set later skips it
            assertEquals(before + tensors.size() - 1, Isthmus.get().liveBuffers());
        }
        assertEquals(before, Isthmus.get().liveBuffers());
    }
}

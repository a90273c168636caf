package io.isthmus.llm;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** Writes NumPy's {@code .npy} format (version 1.0): a float32 matrix, little-endian, C order. */
final class Npy {
    private Npy() {
    }

    /**
     * @param path the file to write (replaced)
     * @param data {@code rows * cols} values, row by row
     * @param rows first dimension
     * @param cols second dimension
     * @throws IOException if the file cannot be written
     */
    static void writeFloat32(Path path, float[] data, int rows, int cols) throws IOException {
        if ((long) rows * cols != data.length) {
            throw new IllegalArgumentException(rows + " x " + cols + " does not match " + data.length + " values");
        }
        String dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + rows + ", " + cols + "), }";
        // magic (6) + version (2) + header length (2) + the dict, spaces and '\n': a multiple of 64 bytes
        int unpadded = 10 + dict.length() + 1;
        int total = (unpadded + 63) / 64 * 64;
        StringBuilder header = new StringBuilder(dict);
        header.append(" ".repeat(total - unpadded)).append('\n');
        ByteBuffer head = ByteBuffer.allocate(10).order(ByteOrder.LITTLE_ENDIAN);
        head.put((byte) 0x93).put("NUMPY".getBytes(StandardCharsets.US_ASCII)).put((byte) 1).put((byte) 0)
                .putShort((short) header.length());
        ByteBuffer body = ByteBuffer.allocate(4 * data.length).order(ByteOrder.LITTLE_ENDIAN);
        body.asFloatBuffer().put(data);
        try (OutputStream out = Files.newOutputStream(path)) {
            out.write(head.array());
            out.write(header.toString().getBytes(StandardCharsets.US_ASCII));
            out.write(body.array());
        }
    }
}

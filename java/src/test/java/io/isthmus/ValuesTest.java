package io.isthmus;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Plain values and the unattached JVM: no runtime needed. */
// one test runs only in a JVM with no runtime: aborted (skipped) in tests/crosslang
@Tag("unattached")
class ValuesTest {
    @Test
    void dtypesMirrorNumpy() {
        assertEquals(8, DType.values().length);
        for (DType d : DType.values()) {
            assertEquals(d, DType.fromPythonName(d.pythonName()));
        }
        assertEquals(2, DType.FLOAT16.size());
        assertEquals(2, DType.BFLOAT16.size());
        assertThrows(UnsupportedDtypeException.class, () -> DType.fromPythonName("complex64"));
    }

    @Test
    void launchConfigIsAValidatedValue() {
        long[] g = {64, 8};
        LaunchConfig c = new LaunchConfig(g, new long[] {8, 8});
        g[0] = 1;
        assertArrayEquals(new long[] {64, 8}, c.global());
        assertEquals(c, new LaunchConfig(new long[] {64, 8}, new long[] {8, 8}));
        assertNull(LaunchConfig.of(5).local());
        assertThrows(LaunchConfigException.class, () -> LaunchConfig.of());
        assertThrows(LaunchConfigException.class, () -> LaunchConfig.of(0));
        assertThrows(LaunchConfigException.class, () -> LaunchConfig.of(1, 2, 3, 4));
        assertThrows(LaunchConfigException.class, () -> new LaunchConfig(new long[] {8}, new long[] {8, 1}));
        assertThrows(InvalidArgumentException.class, () -> new LaunchConfig(null, null));
    }

    @Test
    void unattachedJvmSaysHowToLaunch() {
        assumeFalse(Isthmus.isAttached());
        NotAttachedException e = assertThrows(NotAttachedException.class, Isthmus::get);
        assertTrue(e.getMessage().contains("isthmus java"), e.getMessage());
        assertThrows(NotAttachedException.class, () -> Ops.sum(null));
    }

    @Test
    void errorsDetectedInJavaNeedOnlyAMessage() {
        IsthmusException e = new InvalidArgumentException("x must not be null");
        assertEquals("x must not be null", e.getMessage());
        assertNull(e.pythonType());
        assertNull(e.pythonTraceback());
        CompileException c = new CompileException("no source");
        assertEquals("", c.log());
        assertNull(c.kernelName());
        assertEquals("io.isthmus.ClosedBufferException: gone", new ClosedBufferException("gone").toString());
    }

    @Test
    void strategiesHaveTheirPythonNames() {
        for (Strategy s : Strategy.values()) {
            assertEquals(s, Strategy.fromPythonName(s.pythonName()));
        }
        assertEquals("anneal", Strategy.ANNEAL.pythonName());
        InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> Strategy.fromPythonName("Anneal"));
        assertTrue(e.getMessage().contains("ANNEAL"), e.getMessage());
        assertThrows(InvalidArgumentException.class, () -> Strategy.fromPythonName("simplex"));
    }
}

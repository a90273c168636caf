package app;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Run by Maven surefire with no jvm setting: the test JVM is Maven's own java. */
class CheckTest {
    @Test
    void runsOnTheDevice() throws Exception {
        List<String> lines = Check.all();
        for (String line : lines) {
            System.out.println(line);
        }
        assertEquals(4, lines.size());
    }
}

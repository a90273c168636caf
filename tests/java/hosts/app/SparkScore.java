package app;

import io.isthmus.Device;
import io.isthmus.DeviceBuffer;
import io.isthmus.Isthmus;
import io.isthmus.Ops;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * A Spark local-mode job whose executor tasks score their DataFrame partition on the isthmus device:
 * features (id, f0..fk-1) from a CSV, scores = features @ weights (Ops.gemm), one "id,score,thread"
 * line per row into the output file. Arguments: input CSV, output file, weights (comma-separated).
 */
public final class SparkScore {
    private SparkScore() {
    }

    public static void main(String[] args) throws Exception {
        float[] w = Check.parse(args[2]);
        SparkSession spark = SparkSession.builder().master("local[2]").appName("isthmus-score")
                .config("spark.ui.enabled", "false").getOrCreate();
        try {
            Dataset<Row> df = spark.read().option("header", "true").option("inferSchema", "true").csv(args[0])
                    .repartition(3);
            Dataset<String> scored = df.mapPartitions((MapPartitionsFunction<Row, String>) rows -> {
                List<Row> rs = new ArrayList<>();
                rows.forEachRemaining(rs::add);
                if (rs.isEmpty()) {
                    return Collections.emptyIterator();
                }
                int n = rs.size();
                int k = w.length;
                float[] feats = new float[n * k];
                for (int i = 0; i < n; i++) {
                    for (int j = 0; j < k; j++) {
                        feats[i * k + j] = (float) rs.get(i).getDouble(j + 1);
                    }
                }
                Device dev = Isthmus.get().device();
                try (DeviceBuffer x = dev.fromArray(feats, n, k); DeviceBuffer wb = dev.fromArray(w, k, 1);
                     DeviceBuffer s = Ops.gemm(x, wb)) {
                    float[] score = s.toFloatArray();
                    String thread = Thread.currentThread().getName();
                    List<String> out = new ArrayList<>(n);
                    for (int i = 0; i < n; i++) {
                        out.add(rs.get(i).get(0) + "," + score[i] + "," + thread);
                    }
                    return out.iterator();
                }
            }, Encoders.STRING());
            Files.write(Paths.get(args[1]), scored.collectAsList());
            System.out.println("loader " + Isthmus.class.getClassLoader().getClass().getName() + " live "
                    + Isthmus.get().liveBuffers());
        } finally {
            spark.stop();
        }
    }
}

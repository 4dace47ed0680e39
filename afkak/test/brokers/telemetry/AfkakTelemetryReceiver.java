// A Kafka broker plugin for afkak's KIP-714 tests: a metrics reporter that receives
// client telemetry (ClientTelemetry) and writes each push to a file of the directory
// named by the broker config "afkak.telemetry.dir": push-N.bin (the OTLP bytes, as
// the broker hands them over) and push-N.json (client instance id, terminating,
// content type, the pushing client's id).
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.telemetry.ClientTelemetry;
import org.apache.kafka.server.telemetry.ClientTelemetryPayload;
import org.apache.kafka.server.telemetry.ClientTelemetryReceiver;

public class AfkakTelemetryReceiver implements MetricsReporter, ClientTelemetry, ClientTelemetryReceiver {
    private Path dir;
    private final AtomicInteger pushes = new AtomicInteger();

    @Override
    public void configure(Map<String, ?> configs) {
        Object value = configs.get("afkak.telemetry.dir");
        dir = Paths.get(value == null ? System.getProperty("java.io.tmpdir") : value.toString());
    }

    @Override
    public void init(List<KafkaMetric> metrics) {}

    @Override
    public void metricChange(KafkaMetric metric) {}

    @Override
    public void metricRemoval(KafkaMetric metric) {}

    @Override
    public void close() {}

    @Override
    public ClientTelemetryReceiver clientReceiver() {
        return this;
    }

    @Override
    public void exportMetrics(AuthorizableRequestContext context, ClientTelemetryPayload payload) {
        int n = pushes.incrementAndGet();
        ByteBuffer data = payload.data().duplicate();
        byte[] bytes = new byte[data.remaining()];
        data.get(bytes);
        String meta = String.format(
            "{\"client_instance_id\": \"%s\", \"terminating\": %s, \"content_type\": \"%s\", \"client_id\": \"%s\"}",
            payload.clientInstanceId(), payload.isTerminating(), payload.contentType(), context.clientId());
        try {
            Files.write(dir.resolve("push-" + n + ".bin"), bytes);
            // The .json last: a reader sees a push once its metadata exists.
            Path tmp = dir.resolve("push-" + n + ".json.tmp");
            Files.write(tmp, meta.getBytes(StandardCharsets.UTF_8));
            Files.move(tmp, dir.resolve("push-" + n + ".json"));
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }
}

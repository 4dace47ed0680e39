// The Java client's ack latency, as tools/bench_clients.py's latency workload measures the others:
// one record sent, its acknowledgement awaited (Future.get), repeated.  Run as a single source
// file (java -cp KAFKA_JARS ProducerLatency.java ...) by tools/bench/run_java.py.
//
// Arguments: bootstrap topic count size flush [property=value ...]
//   flush: "true" calls flush() after each send (for a producer lingering 5 ms, Kafka 4's default).
// Prints one line per send ("lat <ms>"), then "cpu <seconds>" (the JVM's CPU time over the sends).

import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;

public class ProducerLatency {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        int count = Integer.parseInt(args[2]);
        int size = Integer.parseInt(args[3]);
        boolean flush = Boolean.parseBoolean(args[4]);
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("key.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        props.put("value.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        for (int i = 5; i < args.length; i++) {
            String[] pair = args[i].split("=", 2);
            props.put(pair[0], pair[1]);
        }
        byte[] value = new byte[size];
        Arrays.fill(value, (byte) 'x');
        com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        StringBuilder out = new StringBuilder();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            // Connection, metadata (and producer id): one send first, as the other clients' runs.
            producer.send(new ProducerRecord<>(topic, "warm-up".getBytes())).get();
            long cpu = os.getProcessCpuTime();
            for (int i = 0; i < count; i++) {
                long began = System.nanoTime();
                Future<RecordMetadata> sent = producer.send(new ProducerRecord<>(topic, value));
                if (flush) {
                    producer.flush();
                }
                sent.get();
                out.append("lat ").append((System.nanoTime() - began) / 1e6).append('\n');
            }
            out.append("cpu ").append((os.getProcessCpuTime() - cpu) / 1e9).append('\n');
        }
        System.out.print(out);
    }
}

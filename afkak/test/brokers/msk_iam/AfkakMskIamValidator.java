// The tests' stand-in for AWS MSK's IAM check: an OAUTHBEARER validator that accepts
// the token AWS's signer makes (a base64url SigV4-presigned kafka-cluster:Connect URL)
// when its signature verifies with the one access key it knows, and it has not expired.
// Configured by the listener's JAAS options region, accessKey and secretKey.
// Compiled by afkak/test/brokers/oauth_kafka.py against Kafka's jars.

import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Base64;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import javax.security.auth.callback.Callback;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.auth.login.AppConfigurationEntry;
import org.apache.kafka.common.security.auth.AuthenticateCallbackHandler;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerToken;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallback;

public class AfkakMskIamValidator implements AuthenticateCallbackHandler {
    private String region;
    private String accessKey;
    private String secretKey;

    @Override
    public void configure(Map<String, ?> configs, String mechanism, List<AppConfigurationEntry> jaas) {
        Map<String, ?> options = jaas.get(0).getOptions();
        region = (String) options.get("region");
        accessKey = (String) options.get("accessKey");
        secretKey = (String) options.get("secretKey");
    }

    @Override
    public void handle(Callback[] callbacks) throws UnsupportedCallbackException {
        for (Callback callback : callbacks) {
            if (!(callback instanceof OAuthBearerValidatorCallback)) {
                throw new UnsupportedCallbackException(callback);
            }
            OAuthBearerValidatorCallback validation = (OAuthBearerValidatorCallback) callback;
            try {
                validation.token(validate(validation.tokenValue()));
            } catch (Exception e) {
                validation.error("invalid_token", null, null);
                System.err.println("AfkakMskIamValidator: refused: " + e.getMessage());
            }
        }
    }

    private OAuthBearerToken validate(String value) throws Exception {
        URI url = URI.create(new String(Base64.getUrlDecoder().decode(value), StandardCharsets.UTF_8));
        String host = "kafka." + region + ".amazonaws.com";
        if (!"https".equals(url.getScheme()) || !host.equals(url.getHost()) || !"/".equals(url.getPath())) {
            throw new Exception("not a presigned URL for " + host);
        }
        Map<String, String> raw = new TreeMap<>();
        for (String pair : url.getRawQuery().split("&")) {
            String[] kv = pair.split("=", 2);
            raw.put(kv[0], kv.length > 1 ? kv[1] : "");
        }
        String date = decoded(raw, "X-Amz-Date");
        String day = date.substring(0, 8);
        String scope = day + "/" + region + "/kafka-cluster/aws4_request";
        if (!"kafka-cluster:Connect".equals(decoded(raw, "Action"))
                || !"AWS4-HMAC-SHA256".equals(decoded(raw, "X-Amz-Algorithm"))
                || !(accessKey + "/" + scope).equals(decoded(raw, "X-Amz-Credential"))
                || !"host".equals(decoded(raw, "X-Amz-SignedHeaders"))) {
            throw new Exception("unexpected action, algorithm, credential or signed headers");
        }
        long signedAt = LocalDateTime.parse(date, DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'"))
                .toEpochSecond(ZoneOffset.UTC) * 1000;
        long expires = signedAt + Long.parseLong(decoded(raw, "X-Amz-Expires")) * 1000;
        if (expires <= System.currentTimeMillis()) {
            throw new Exception("expired");
        }
        StringBuilder query = new StringBuilder();
        for (Map.Entry<String, String> entry : raw.entrySet()) {
            if (entry.getKey().equals("X-Amz-Signature") || entry.getKey().equals("User-Agent")) {
                continue;
            }
            query.append(query.length() == 0 ? "" : "&").append(entry.getKey()).append('=').append(entry.getValue());
        }
        String canonical = String.join("\n", "GET", "/", query, "host:" + host, "", "host", sha256(""));
        String toSign = String.join("\n", "AWS4-HMAC-SHA256", date, scope, sha256(canonical));
        byte[] key = ("AWS4" + secretKey).getBytes(StandardCharsets.UTF_8);
        for (String part : new String[] {day, region, "kafka-cluster", "aws4_request", toSign}) {
            key = hmac(key, part);
        }
        if (!MessageDigest.isEqual(HexFormat.of().formatHex(key).getBytes(), decoded(raw, "X-Amz-Signature").getBytes())) {
            throw new Exception("signature mismatch");
        }
        return new Token(value, accessKey, signedAt, expires);
    }

    private static String decoded(Map<String, String> raw, String name) throws Exception {
        String value = raw.get(name);
        if (value == null) {
            throw new Exception("no " + name);
        }
        return URLDecoder.decode(value, StandardCharsets.UTF_8);
    }

    private static String sha256(String text) throws Exception {
        return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8)));
    }

    private static byte[] hmac(byte[] key, String data) throws Exception {
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(key, "HmacSHA256"));
        return mac.doFinal(data.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public void close() {
    }

    private static final class Token implements OAuthBearerToken {
        private final String value;
        private final String principal;
        private final long start;
        private final long lifetime;

        Token(String value, String principal, long start, long lifetime) {
            this.value = value;
            this.principal = principal;
            this.start = start;
            this.lifetime = lifetime;
        }

        public String value() { return value; }
        public Set<String> scope() { return Collections.emptySet(); }
        public long lifetimeMs() { return lifetime; }
        public String principalName() { return principal; }
        public Long startTimeMs() { return start; }
    }
}

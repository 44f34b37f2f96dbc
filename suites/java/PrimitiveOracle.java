// Reads "hexUtf8<TAB>buckets" lines on stdin and answers with what the JVM and Guava compute:
// String.hashCode, Hashing.consistentHash(hashCode, buckets), Hashing.sipHash24().hashBytes(utf8).asLong(),
// the first four MD5 bytes as an unsigned int, and Math.abs(hashCode % buckets). Used by
// suites/test_java_primitives.py to check the reference's Python primitives (PRIM-01..04).
import com.google.common.hash.Hashing;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;

public final class PrimitiveOracle {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        MessageDigest md5 = MessageDigest.getInstance("MD5");
        String line;
        while ((line = in.readLine()) != null) {
            String[] parts = line.split("\t", -1);
            byte[] utf8 = decodeHex(parts[0]);
            int buckets = Integer.parseInt(parts[1]);
            String text = new String(utf8, StandardCharsets.UTF_8);
            int hash = text.hashCode();
            int consistent = Hashing.consistentHash((long) hash, buckets);
            long sip = Hashing.sipHash24().hashBytes(utf8).asLong();
            byte[] digest = md5.digest(utf8);
            long ring = ((long) (digest[0] & 0xFF) << 24) | ((digest[1] & 0xFF) << 16) | ((digest[2] & 0xFF) << 8) | (digest[3] & 0xFF);
            int remainder = hash % buckets;
            int selected = remainder < 0 ? Math.abs(remainder) : remainder;
            System.out.println(hash + "\t" + consistent + "\t" + sip + "\t" + ring + "\t" + selected);
            System.out.flush();
        }
    }

    private static byte[] decodeHex(String hex) {
        byte[] out = new byte[hex.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
        }
        return out;
    }
}

// Reads one hex-encoded UTF-8 string per line and answers with what the JDK's number parsers make of it:
// Integer.valueOf, Long.valueOf, Double.valueOf (as raw IEEE bits) and Boolean.valueOf, "NFE" where one
// throws NumberFormatException. Used by suites/test_primitives.py to check the reference's Java parsing
// (FILTER-06, DELAY-02): JDK classes only, nothing from RocketMQ.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

public final class NumberOracle {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            byte[] utf8 = new byte[line.length() / 2];
            for (int i = 0; i < utf8.length; i++) {
                utf8[i] = (byte) Integer.parseInt(line.substring(2 * i, 2 * i + 2), 16);
            }
            String text = new String(utf8, StandardCharsets.UTF_8);
            String asInt;
            try {
                asInt = String.valueOf(Integer.valueOf(text));
            } catch (NumberFormatException e) {
                asInt = "NFE";
            }
            String asLong;
            try {
                asLong = String.valueOf(Long.valueOf(text));
            } catch (NumberFormatException e) {
                asLong = "NFE";
            }
            String asDouble;
            try {
                asDouble = String.valueOf(Double.doubleToRawLongBits(Double.valueOf(text)));
            } catch (NumberFormatException e) {
                asDouble = "NFE";
            }
            System.out.println(asInt + "\t" + asLong + "\t" + asDouble + "\t" + Boolean.valueOf(text));
            System.out.flush();
        }
    }
}

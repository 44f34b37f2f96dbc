package rmqc.driver;

import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;

/**
 * rocketmq-conformance's Java driver: the official Java clients behind the driver protocol.
 *
 * <pre>
 *   java -cp 'drivers/java/target/classes:drivers/java/target/dependency/*' rmqc.driver.Main --mode remoting
 *        --namesrv 127.0.0.1:9876 [--time-scale 0.01] [--epoch S] [--wire-scale X]
 *   ... rmqc.driver.Main --mode grpc --endpoint 127.0.0.1:8081 [--time-scale 0.01] [--epoch S]
 *        [--timestamp-base-ms MS] [--wire-scale X]
 * </pre>
 *
 * Standard output carries the protocol only: whatever else writes to {@code System.out} (a client's logging)
 * is sent to standard error.
 */
public final class Main {
    private Main() {
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = new HashMap<>();
        for (int i = 0; i < argv.length; i += 2) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                System.err.println("rmqc java driver: unknown or incomplete option " + argv[i]);
                System.exit(2);
            }
            args.put(argv[i].substring(2), argv[i + 1]);
        }
        PrintStream protocol = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        Clock clock = new Clock(Double.parseDouble(args.getOrDefault("time-scale", "1")),
                args.containsKey("epoch") ? Double.valueOf(args.get("epoch")) : null,
                Double.parseDouble(args.getOrDefault("wire-scale", "1")),
                args.containsKey("timestamp-base-ms") ? Math.round(Double.parseDouble(args.get("timestamp-base-ms"))) : null);
        Wire wire = new Wire(protocol, clock);
        String mode = args.getOrDefault("mode", "");
        Mode driver;
        switch (mode) {
            case "remoting":
                driver = new Remoting4xMode(wire, required(args, "namesrv"), versions());
                break;
            case "grpc":
                driver = new Grpc5xMode(wire, required(args, "endpoint"), versions());
                break;
            default:
                System.err.println("rmqc java driver: --mode must be remoting (the 4.x client) or grpc (the 5.x client)");
                System.exit(2);
                return;
        }
        wire.run(driver);
        System.exit(0);
    }

    private static String required(Map<String, String> args, String name) {
        String value = args.get(name);
        if (value == null) {
            System.err.println("rmqc java driver: --" + name + " is required in this mode");
            System.exit(2);
        }
        return value;
    }

    /** The client versions pinned in the POM (written into the jar at build time). */
    static Properties versions() throws IOException {
        Properties p = new Properties();
        try (InputStream in = Main.class.getResourceAsStream("/rmqc-driver.properties")) {
            if (in != null) {
                p.load(in);
            }
        }
        return p;
    }
}

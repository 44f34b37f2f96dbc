// The project's own JVM oracle over a released RocketMQ's classes (issue 35): it reads one JSON call per line on
// stdin and answers one JSON line on stdout, calling the real classes that are on its class path (the release's
// jars, resolved from Maven Central by suites/release_oracle.py). Nothing of RocketMQ's is compiled into it: every
// class is found by name and called by reflection, private members included.
//
// A call:   {"class": C, "method": M, "types": [T...], "args": [V...], "target": V, "read": [N...]}
//   method  a method name; "<init>" for a constructor; "#NAME" reads a static field
//   types   the parameter types ("int", "java.lang.String", "java.util.List", ...): they choose the overload
//   target  the receiver of an instance method (a value, below); absent for a static method
//   read    getters or fields to read from the result instead of the result itself (an object of them)
//   of      with read: read them from the argument at this index instead (a method that fills an argument
//           in, such as a response), the result itself then under "return"
// A value:  JSON null, true/false, a string; {"int"|"long"|"short"|"byte": n}, {"double"|"float": text},
//           {"char": s}, {"bytes": hex}, {"list": [V...]}, {"set": [V...]}, {"map": [[K, V]...]},
//           {"enum": C, "name": N}, {"new": C, "types": [T...], "args": [V...]} (a constructor),
//           {"alloc": C, "set": {field: V}} (an instance made without a constructor, fields set by reflection),
//           {"call": <a call>} (the result of another call)
// An answer: {"value": R} or {"thrown": exception class, "message": text, "code": n?}; {"error": text} when the
//           call itself is malformed (no such class or method). Results: null, booleans, strings, integral
//           numbers as JSON numbers, doubles as {"double": Double.toString}, chars as strings, byte[] as
//           {"bytes": hex}, arrays and collections as lists, maps as [[k, v]...], enums by name, anything else
//           as {"class": name, "string": toString()}. Strings are written with \\u escapes for every unit
//           outside ASCII, so lone surrogates survive.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Array;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

public final class ReleaseOracle {
    private static PrintStream out;

    public static void main(String[] argv) throws Exception {
        out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
        // the classes under test may log or print: keep the answer channel ours alone
        System.setOut(new PrintStream(new java.io.OutputStream() { public void write(int b) { } }));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            StringBuilder answer = new StringBuilder();
            try {
                Object call = new Json(line).parse();
                Object value = invoke(asMap(call));
                answer.append("{\"value\":");
                write(answer, value, 0);
                answer.append('}');
            } catch (Thrown t) {
                answer.setLength(0);
                Throwable e = t.getCause();
                answer.append("{\"thrown\":");
                writeString(answer, e.getClass().getName());
                answer.append(",\"message\":");
                writeString(answer, e.getMessage());
                Object code = code(e);
                if (code != null) {
                    answer.append(",\"code\":").append(code);
                }
                answer.append('}');
            } catch (Throwable e) {
                answer.setLength(0);
                answer.append("{\"error\":");
                writeString(answer, e.toString());
                answer.append('}');
            }
            out.println(answer);
        }
    }

    /** What the method under test threw (as opposed to a malformed call). */
    private static final class Thrown extends Exception {
        Thrown(Throwable cause) {
            super(cause);
        }
    }

    private static Object code(Throwable e) {
        for (String name : new String[] {"getResponseCode", "getCode", "getErrorCode"}) {
            try {
                Method m = e.getClass().getMethod(name);
                Object v = m.invoke(e);
                if (v instanceof Number) {
                    return v;
                }
                if (v != null) {
                    StringBuilder b = new StringBuilder();
                    writeString(b, v.toString());
                    return b.toString();
                }
            } catch (ReflectiveOperationException | RuntimeException ignored) {
                // no such getter: no code
            }
        }
        return null;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> asMap(Object o) {
        return (Map<String, Object>) o;
    }

    @SuppressWarnings("unchecked")
    private static List<Object> asList(Object o) {
        return o == null ? new ArrayList<>() : (List<Object>) o;
    }

    private static Class<?> type(String name) throws ClassNotFoundException {
        switch (name) {
            case "int": return int.class;
            case "long": return long.class;
            case "short": return short.class;
            case "byte": return byte.class;
            case "char": return char.class;
            case "boolean": return boolean.class;
            case "double": return double.class;
            case "float": return float.class;
            case "byte[]": return byte[].class;
            case "java.lang.String[]": return String[].class;
            default: return Class.forName(name, false, ReleaseOracle.class.getClassLoader());
        }
    }

    private static Class<?>[] types(List<Object> names) throws ClassNotFoundException {
        Class<?>[] out = new Class<?>[names.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = type((String) names.get(i));
        }
        return out;
    }

    private static Object invoke(Map<String, Object> call) throws Exception {
        Class<?> cls = type((String) call.get("class"));
        String method = (String) call.get("method");
        List<Object> typeNames = asList(call.get("types"));
        Class<?>[] params = types(typeNames);
        List<Object> rawArgs = asList(call.get("args"));
        Object[] args = new Object[rawArgs.size()];
        for (int i = 0; i < args.length; i++) {
            args[i] = value(rawArgs.get(i), i < params.length ? params[i] : Object.class);
        }
        Object result;
        try {
            if (method.startsWith("#")) {
                Field f = field(cls, method.substring(1));
                result = f.get(call.containsKey("target") ? value(call.get("target"), cls) : null);
            } else if (method.equals("<init>")) {
                Constructor<?> c = cls.getDeclaredConstructor(params);
                c.setAccessible(true);
                result = c.newInstance(args);
            } else {
                Method m = method(cls, method, params);
                Object target = Modifier.isStatic(m.getModifiers()) ? null : value(call.get("target"), cls);
                result = m.invoke(target, args);
            }
        } catch (InvocationTargetException e) {
            throw new Thrown(e.getCause());
        }
        List<Object> read = asList(call.get("read"));
        if (read.isEmpty()) {
            return result;
        }
        Map<String, Object> fields = new LinkedHashMap<>();
        Object from = result;
        if (call.containsKey("of")) {
            from = args[((Long) call.get("of")).intValue()];
            fields.put("return", result);
        }
        for (Object name : read) {
            fields.put((String) name, member(from, (String) name));
        }
        return fields;
    }

    private static Object member(Object target, String name) throws Exception {
        if (target == null) {
            return null;
        }
        for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Method m = c.getDeclaredMethod(name);
                m.setAccessible(true);
                return m.invoke(target);
            } catch (NoSuchMethodException ignored) {
                // try the superclass, then the fields
            } catch (InvocationTargetException e) {
                throw new Thrown(e.getCause());
            }
        }
        return field(target.getClass(), name).get(target);
    }

    private static Method method(Class<?> cls, String name, Class<?>[] params) throws NoSuchMethodException {
        for (Class<?> c = cls; c != null; c = c.getSuperclass()) {
            try {
                Method m = c.getDeclaredMethod(name, params);
                m.setAccessible(true);
                return m;
            } catch (NoSuchMethodException ignored) {
                // look in the superclass
            }
        }
        throw new NoSuchMethodException(cls.getName() + "." + name);
    }

    private static Field field(Class<?> cls, String name) throws NoSuchFieldException {
        for (Class<?> c = cls; c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f;
            } catch (NoSuchFieldException ignored) {
                // look in the superclass
            }
        }
        throw new NoSuchFieldException(cls.getName() + "." + name);
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static Object value(Object v, Class<?> want) throws Exception {
        if (v == null || v instanceof String || v instanceof Boolean) {
            if (v instanceof String && (want == char.class || want == Character.class)) {
                return ((String) v).charAt(0);
            }
            return v;
        }
        if (v instanceof Long) {
            long n = (Long) v;
            if (want == long.class || want == Long.class) {
                return n;
            }
            if (want == short.class || want == Short.class) {
                return (short) n;
            }
            if (want == byte.class || want == Byte.class) {
                return (byte) n;
            }
            return (int) n;
        }
        if (v instanceof List) {
            List<Object> items = asList(v);
            Object array = Array.newInstance(want.isArray() ? want.getComponentType() : Object.class, items.size());
            for (int i = 0; i < items.size(); i++) {
                Array.set(array, i, value(items.get(i), array.getClass().getComponentType()));
            }
            return array;
        }
        Map<String, Object> m = asMap(v);
        if (m.containsKey("int")) {
            return ((Long) m.get("int")).intValue();
        }
        if (m.containsKey("long")) {
            return (Long) m.get("long");
        }
        if (m.containsKey("short")) {
            return ((Long) m.get("short")).shortValue();
        }
        if (m.containsKey("byte")) {
            return ((Long) m.get("byte")).byteValue();
        }
        if (m.containsKey("double")) {
            return Double.valueOf((String) m.get("double"));
        }
        if (m.containsKey("float")) {
            return Float.valueOf((String) m.get("float"));
        }
        if (m.containsKey("char")) {
            return ((String) m.get("char")).charAt(0);
        }
        if (m.containsKey("bytes")) {
            String hex = (String) m.get("bytes");
            byte[] b = new byte[hex.length() / 2];
            for (int i = 0; i < b.length; i++) {
                b[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
            }
            return b;
        }
        if (m.containsKey("alloc")) {
            Class<?> cls = type((String) m.get("alloc"));
            Object o = allocate(cls);
            Object set = m.get("set");
            if (set != null) {
                for (Map.Entry<String, Object> e : asMap(set).entrySet()) {
                    Field f = field(cls, e.getKey());
                    f.set(o, value(e.getValue(), f.getType()));
                }
            }
            return o;
        }
        if (m.containsKey("list") || m.containsKey("set")) {
            Collection<Object> c = m.containsKey("list") ? new ArrayList<>() : new HashSet<>();
            for (Object item : asList(m.containsKey("list") ? m.get("list") : m.get("set"))) {
                c.add(value(item, Object.class));
            }
            return c;
        }
        if (m.containsKey("map")) {
            Map<Object, Object> map = new HashMap<>();
            for (Object pair : asList(m.get("map"))) {
                List<Object> kv = asList(pair);
                map.put(value(kv.get(0), Object.class), value(kv.get(1), Object.class));
            }
            return map;
        }
        if (m.containsKey("enum")) {
            return Enum.valueOf((Class) type((String) m.get("enum")), (String) m.get("name"));
        }
        if (m.containsKey("new")) {
            Map<String, Object> call = new LinkedHashMap<>();
            call.put("class", m.get("new"));
            call.put("method", "<init>");
            call.put("types", m.get("types"));
            call.put("args", m.get("args"));
            return invoke(call);
        }
        if (m.containsKey("call")) {
            return invoke(asMap(m.get("call")));
        }
        throw new IllegalArgumentException("not a value: " + v);
    }

    private static Object allocate(Class<?> cls) throws Exception {
        Class<?> unsafeClass = Class.forName("sun.misc.Unsafe");
        Field theUnsafe = unsafeClass.getDeclaredField("theUnsafe");
        theUnsafe.setAccessible(true);
        Object unsafe = theUnsafe.get(null);
        return unsafeClass.getMethod("allocateInstance", Class.class).invoke(unsafe, cls);
    }

    // ---- JSON out ------------------------------------------------------------------------------------------

    private static void write(StringBuilder b, Object v, int depth) {
        if (v == null) {
            b.append("null");
        } else if (v instanceof Boolean) {
            b.append(v);
        } else if (v instanceof Double || v instanceof Float) {
            b.append("{\"double\":");
            writeString(b, v.toString());
            b.append('}');
        } else if (v instanceof Number) {
            b.append(v);
        } else if (v instanceof CharSequence || v instanceof Character) {
            writeString(b, v.toString());
        } else if (v instanceof byte[]) {
            StringBuilder hex = new StringBuilder();
            for (byte x : (byte[]) v) {
                hex.append(String.format("%02x", x & 0xFF));
            }
            b.append("{\"bytes\":\"").append(hex).append("\"}");
        } else if (v instanceof Enum) {
            writeString(b, ((Enum<?>) v).name());
        } else if (depth > 8) {
            writeString(b, v.toString());
        } else if (v.getClass().isArray()) {
            b.append('[');
            for (int i = 0; i < Array.getLength(v); i++) {
                if (i > 0) {
                    b.append(',');
                }
                write(b, Array.get(v, i), depth + 1);
            }
            b.append(']');
        } else if (v instanceof Collection) {
            b.append('[');
            boolean first = true;
            for (Object item : (Collection<?>) v) {
                if (!first) {
                    b.append(',');
                }
                first = false;
                write(b, item, depth + 1);
            }
            b.append(']');
        } else if (v instanceof Map) {
            b.append('[');
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (!first) {
                    b.append(',');
                }
                first = false;
                b.append('[');
                write(b, e.getKey(), depth + 1);
                b.append(',');
                write(b, e.getValue(), depth + 1);
                b.append(']');
            }
            b.append(']');
        } else {
            b.append("{\"class\":");
            writeString(b, v.getClass().getName());
            b.append(",\"string\":");
            writeString(b, String.valueOf(v));
            b.append('}');
        }
    }

    private static void writeString(StringBuilder b, String s) {
        if (s == null) {
            b.append("null");
            return;
        }
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c >= 0x20 && c < 0x7F) {
                b.append(c);
            } else {
                b.append(String.format("\\u%04x", (int) c));
            }
        }
        b.append('"');
    }

    // ---- JSON in: objects, arrays, strings, integers, true/false/null (what the Python side writes) -------

    private static final class Json {
        private final String s;
        private int i;

        Json(String s) {
            this.s = s;
        }

        Object parse() {
            skip();
            char c = s.charAt(i);
            if (c == '{') {
                i++;
                Map<String, Object> m = new LinkedHashMap<>();
                skip();
                if (s.charAt(i) == '}') {
                    i++;
                    return m;
                }
                while (true) {
                    skip();
                    String key = (String) parse();
                    skip();
                    i++; // ':'
                    m.put(key, parse());
                    skip();
                    if (s.charAt(i++) == '}') {
                        return m;
                    }
                }
            }
            if (c == '[') {
                i++;
                List<Object> l = new ArrayList<>();
                skip();
                if (s.charAt(i) == ']') {
                    i++;
                    return l;
                }
                while (true) {
                    l.add(parse());
                    skip();
                    if (s.charAt(i++) == ']') {
                        return l;
                    }
                }
            }
            if (c == '"') {
                i++;
                StringBuilder b = new StringBuilder();
                while (s.charAt(i) != '"') {
                    char d = s.charAt(i++);
                    if (d == '\\') {
                        char e = s.charAt(i++);
                        switch (e) {
                            case 'n': b.append('\n'); break;
                            case 't': b.append('\t'); break;
                            case 'r': b.append('\r'); break;
                            case 'b': b.append('\b'); break;
                            case 'f': b.append('\f'); break;
                            case 'u': b.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; break;
                            default: b.append(e);
                        }
                    } else {
                        b.append(d);
                    }
                }
                i++;
                return b.toString();
            }
            if (s.startsWith("true", i)) {
                i += 4;
                return Boolean.TRUE;
            }
            if (s.startsWith("false", i)) {
                i += 5;
                return Boolean.FALSE;
            }
            if (s.startsWith("null", i)) {
                i += 4;
                return null;
            }
            int start = i;
            while (i < s.length() && "+-0123456789".indexOf(s.charAt(i)) >= 0) {
                i++;
            }
            return Long.parseLong(s.substring(start, i));
        }

        private void skip() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
                i++;
            }
        }
    }
}

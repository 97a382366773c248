// A run's "env": variables set in the JVM's own environment for that run (see LmcJava.java).

import java.lang.reflect.Field;
import java.util.Map;

/** Variables set in this process's environment for one run (children see them too). */
final class LmcEnv {
  private LmcEnv() {}

  @SuppressWarnings("unchecked")
  private static Map<String, String> live() throws ReflectiveOperationException {
    Field inner = Class.forName("java.util.Collections$UnmodifiableMap").getDeclaredField("m");
    inner.setAccessible(true);
    return (Map<String, String>) inner.get(System.getenv());
  }

  static void set(Map<String, Object> values, Map<String, String> saved) throws Exception {
    Map<String, String> env = live();
    for (Map.Entry<String, Object> entry : values.entrySet()) {
      saved.putIfAbsent(entry.getKey(), env.get(entry.getKey()));
      env.put(entry.getKey(), String.valueOf(entry.getValue()));
    }
  }

  static void restore(Map<String, String> saved) {
    if (saved.isEmpty()) {
      return;
    }
    try {
      Map<String, String> env = live();
      saved.forEach((key, value) -> {
        if (value == null) {
          env.remove(key);
        } else {
          env.put(key, value);
        }
      });
    } catch (ReflectiveOperationException failed) {
      System.err.println("the environment could not be restored: " + failed);
    }
  }
}

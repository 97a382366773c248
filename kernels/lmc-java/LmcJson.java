// Just enough JSON for the runner protocol (see LmcJava.java).

import java.util.HashMap;
import java.util.Map;

/** Just enough JSON: the requests' objects in, quoted strings out. */
final class LmcJson {
  private final String text;
  private int at;

  private LmcJson(String text) {
    this.text = text;
  }

  @SuppressWarnings("unchecked")
  static Map<String, Object> object(String line) {
    try {
      Object value = new LmcJson(line).value();
      return value instanceof Map ? (Map<String, Object>) value : null;
    } catch (RuntimeException unreadable) {
      return null;
    }
  }

  static StringBuilder quote(CharSequence text, StringBuilder out) {
    out.append('"');
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c == '\n') {
        out.append("\\n");
      } else if (c < 0x20 || Character.isSurrogate(c)) {
        boolean pair = Character.isHighSurrogate(c) && i + 1 < text.length()
            && Character.isLowSurrogate(text.charAt(i + 1));
        if (pair) {
          out.append(c).append(text.charAt(++i));
        } else {
          out.append(c < 0x20 ? String.format("\\u%04x", (int) c) : "\ufffd");
        }
      } else {
        out.append(c);
      }
    }
    return out.append('"');
  }

  private char next() {
    while (Character.isWhitespace(text.charAt(at))) {
      at++;
    }
    return text.charAt(at);
  }

  private Object value() {
    char c = next();
    if (c == '{') {
      Map<String, Object> map = new HashMap<>();
      at++;
      while (next() != '}') {
        String key = string();
        if (next() != ':') {
          throw new IllegalArgumentException("a colon");
        }
        at++;
        map.put(key, value());
        if (next() == ',') {
          at++;
        }
      }
      at++;
      return map;
    }
    if (c == '"') {
      return string();
    }
    int start = at;
    while (at < text.length() && "{}[],: \t".indexOf(text.charAt(at)) < 0) {
      at++;
    }
    String word = text.substring(start, at);
    return word.equals("true") || word.equals("false") ? (Object) Boolean.valueOf(word)
        : word.equals("null") ? null : (Object) Double.valueOf(word);
  }

  private String string() {
    StringBuilder out = new StringBuilder();
    at++;
    for (char c; (c = text.charAt(at++)) != '"'; ) {
      if (c != '\\') {
        out.append(c);
        continue;
      }
      char e = text.charAt(at++);
      switch (e) {
        case 'n': out.append('\n'); break;
        case 't': out.append('\t'); break;
        case 'r': out.append('\r'); break;
        case 'b': out.append('\b'); break;
        case 'f': out.append('\f'); break;
        case 'u': out.append((char) Integer.parseInt(text.substring(at, at + 4), 16)); at += 4; break;
        default: out.append(e);
      }
    }
    return out.toString();
  }
}

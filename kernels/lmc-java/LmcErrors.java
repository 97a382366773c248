// How the Java runner tells a run's failures (see LmcJava.java): a compile error at its line
// of the cell with a caret under it, an exception with its frames in cells as lines of those
// cells ("line 3", or "line 3 of an earlier run" for a method an earlier cell declared).

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;
import jdk.jshell.DeclarationSnippet;
import jdk.jshell.Diag;
import jdk.jshell.EvalException;
import jdk.jshell.JShell;
import jdk.jshell.UnresolvedReferenceException;

final class LmcErrors {
  /** Where each snippet came from: {request, line of its cell}; the last 10,000. */
  private static final Map<String, long[]> ORIGINS =
      new LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, long[]> eldest) {
          return size() > 10_000;
        }
      };

  private LmcErrors() {}

  /** The snippet ``snippet`` of run ``id`` starts at ``line`` of its cell. */
  static void remember(String snippet, long id, long line) {
    ORIGINS.put(snippet, new long[] {id, line});
  }

  /** A compile error of the snippet, told at its line of the cell with a caret under it. */
  static String compileError(String code, int[] snippet, Diag diag) {
    long start = diag.getStartPosition() >= 0 ? diag.getStartPosition() : diag.getPosition();
    int at = (int) Math.max(snippet[0], Math.min(snippet[1] - 1, snippet[0] + Math.max(start, 0)));
    int end = (int) Math.min(snippet[1], snippet[0] + Math.max(diag.getEndPosition(), start + 1));
    int from = code.lastIndexOf('\n', at - 1) + 1;
    int to = code.indexOf('\n', at);
    to = to < 0 ? code.length() : to;
    int width = Math.max(1, Math.min(end, to) - at);
    String caret = width == 1 ? "^" : "^" + "-".repeat(width - 2) + "^";
    return "Error at line " + lineOf(code, at) + ":\n" + diag.getMessage(Locale.ROOT) + "\n"
        + code.substring(from, to) + "\n" + " ".repeat(at - from) + caret + "\n";
  }

  /** An exception of run ``id``, its frames in cells told as lines of those cells. */
  static void describe(JShell shell, Throwable error, StringBuilder told, long id, String lead) {
    if (error instanceof UnresolvedReferenceException) {
      DeclarationSnippet declared = ((UnresolvedReferenceException) error).getSnippet();
      String missing = shell.unresolvedDependencies(declared).collect(Collectors.joining(", "));
      told.append("Attempted to use ").append(declared.name())
          .append(", which cannot be used until ").append(missing).append(" is declared\n");
      return;
    }
    String kind = error instanceof EvalException
        ? ((EvalException) error).getExceptionClassName() : error.getClass().getName();
    told.append(lead).append(kind);
    if (error.getMessage() != null) {
      told.append(": ").append(error.getMessage());
    }
    told.append('\n');
    for (StackTraceElement frame : error.getStackTrace()) {
      String file = frame.getFileName();
      if (file != null && file.startsWith("#")) {
        String method = frame.getMethodName().isEmpty() ? "" : frame.getMethodName() + " ";
        told.append("\tat ").append(method).append('(')
            .append(where(file.substring(1), frame.getLineNumber(), id)).append(")\n");
      } else {
        told.append("\tat ").append(frame).append('\n');
      }
    }
    if (error.getCause() != null && error.getCause() != error) {
      describe(shell, error.getCause(), told, id, "Caused by: ");
    }
  }

  /** A frame's place as a line of a cell: this run's, or an earlier one's. */
  private static String where(String snippet, int line, long id) {
    long[] origin = ORIGINS.get(snippet);
    if (origin == null || line < 1) {
      return "#" + snippet + ":" + line;
    }
    String earlier = origin[0] == id ? "" : " of an earlier run";
    return "line " + (origin[1] + line - 1) + earlier;
  }

  /** The line of the cell at character ``at`` (1-based). */
  static long lineOf(String code, int at) {
    return code.substring(0, at).chars().filter(c -> c == '\n').count() + 1;
  }
}

// The program lmc-runtime runs inside the JVM for Java: a persistent evaluator on the JShell API.
//
//   java [flags] -cp BUILD LmcJava EVENTS_FIFO CONTROL_FIFO
//
// It speaks the line protocol of ../lmc-node/runner.js: requests are JSON lines on CONTROL_FIFO,
// {"id": 1, "code": "...", "lines": true, "env": {NAME: VALUE}} or {"stop": 1}; events are JSON
// lines on EVENTS_FIFO: "r" ready, "o"/"e" output ("v": the value of the cell's last expression,
// shown as stdout), "l" the line now running, "d" done (with "c",
// this JVM's count of runs, and "n", a failed run's error: the exception's fully qualified class
// name, or CompilationError for code that does not compile). The text that tells that error
// is an "e" event naming it too, before its text: {"k":"e","n":NAME,"d":TEXT}. One more:
//   {"k":"i","id":ID}    the code reads System.in and nothing is there yet: it waits for a line
//
// A cell is cut into snippets by JShell's own parser (analyzeCompletion) before any of it runs,
// so a cell that ends mid-statement runs nothing. Snippets run in this JVM (local execution):
// a stop request stops the one running, and System.exit ends the process with its code.
// Errors name the lines of the cell: a compile error its line, an exception's frames theirs.
// The value of a cell's last snippet, when it is an expression (not a void call, a statement or
// a declaration) with no semicolon after it, is printed on stdout as JShell shows it: "x" for a
// String, 2 for 1 + 1. A semicolon makes it a statement, which shows nothing (as in IPython).
//
// Its other classes, in this folder: LmcEvents (the events FIFO and the code's streams),
// LmcErrors (how failures are told), LmcEnv (a run's "env"), LmcJson (the requests' JSON).

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.stream.Collectors;
import jdk.jshell.DeclarationSnippet;
import jdk.jshell.Diag;
import jdk.jshell.EvalException;
import jdk.jshell.JShell;
import jdk.jshell.JShellException;
import jdk.jshell.Snippet;
import jdk.jshell.SnippetEvent;
import jdk.jshell.SourceCodeAnalysis;

public final class LmcJava {
  private static JShell shell;
  /** The request running, or -1; whether a stop for it came. */
  static volatile long running = -1;

  private static volatile boolean stopped;
  /** How many runs this JVM has had; the class of the error that ended the run going on. */
  private static long runs;

  private static String error;
  /** Snippet kinds whose value is the cell's result: an expression's, a bare variable's. */
  private static final java.util.Set<Snippet.SubKind> RESULTS =
      java.util.EnumSet.of(
          Snippet.SubKind.TEMP_VAR_EXPRESSION_SUBKIND, Snippet.SubKind.VAR_VALUE_SUBKIND);

  public static void main(String[] args) throws Exception {
    boolean warm = args.length == 1 && args[0].equals("--warm");
    LmcEvents.events = warm ? OutputStream.nullOutputStream() : new FileOutputStream(args[0]);
    System.setOut(new PrintStream(new LmcEvents.Captured("o"), true, StandardCharsets.UTF_8));
    System.setErr(new PrintStream(new LmcEvents.Captured("e"), true, StandardCharsets.UTF_8));
    System.setIn(new LmcEvents.Asking(new FileInputStream(FileDescriptor.in)));
    Thread writer = new Thread(LmcEvents::writeEvents, "lmc-events");
    writer.setDaemon(true);
    writer.start();
    Runtime.getRuntime().addShutdownHook(new Thread(LmcEvents::drain, "lmc-drain"));
    shell = JShell.builder().executionEngine("local").build();
    for (SnippetEvent first : shell.eval("Object lmc$warm = String.valueOf(1);")) {
      shell.drop(first.snippet()); // the compiler is loaded and warm before the first cell
    }
    if (warm) { // `lmc setup` records the classes a session loads (a class-data archive)
      for (String code : WARM_UP) {
        String quoted = LmcJson.quote(code, new StringBuilder()).toString();
        run(LmcJson.object("{\"id\": 1, \"lines\": true, \"code\": " + quoted + "}"));
      }
      return;
    }
    FileInputStream control = new FileInputStream(args[1]);
    BlockingQueue<Map<String, Object>> runs = new LinkedBlockingQueue<>();
    Thread reader = new Thread(() -> readControl(control, runs), "lmc-control");
    reader.setDaemon(true);
    reader.start();
    LmcEvents.emit("{\"k\":\"r\",\"pid\":" + ProcessHandle.current().pid() + "}");
    while (true) {
      Map<String, Object> request = runs.take();
      if (request.isEmpty()) {
        System.exit(0); // the control FIFO ended: the runtime is gone
      }
      run(request);
    }
  }

  /** Cells that load what a session's first runs load. */
  private static final String[] WARM_UP = {
    "int n = 1;\nSystem.out.println(n + \" é\");",
    "void f() {\n  throw new IllegalStateException(\"x\");\n}\nf();",
    "int wrong = \"x\";",
    "record R(int x) {}\nclass C {}\nvar list = java.util.List.of(new R(1));",
    "void g() { h(); }",
  };

  private static void readControl(InputStream control, BlockingQueue<Map<String, Object>> runs) {
    try (BufferedReader lines =
        new BufferedReader(new InputStreamReader(control, StandardCharsets.UTF_8))) {
      for (String line; (line = lines.readLine()) != null; ) {
        Map<String, Object> request = LmcJson.object(line);
        if (request == null) {
          continue;
        }
        Object stop = request.get("stop");
        if (stop instanceof Number) {
          if (((Number) stop).longValue() == running) {
            stopped = true;
            shell.stop();
          }
        } else if (request.get("id") instanceof Number && request.get("code") instanceof String) {
          runs.add(request);
        }
      }
    } catch (IOException failed) {
      // the same as the end of the FIFO
    }
    runs.add(Map.of());
  }

  // -- one run ------------------------------------------------------------------------------

  @SuppressWarnings("unchecked")
  private static void run(Map<String, Object> request) {
    long id = ((Number) request.get("id")).longValue();
    String code = ((String) request.get("code")).replace("\r\n", "\n");
    boolean lines = Boolean.TRUE.equals(request.get("lines"));
    Object env = request.get("env");
    String status = "ok";
    Map<String, String> saved = new HashMap<>();
    runs++;
    error = null;
    try {
      List<int[]> snippets = new ArrayList<>();
      if (!cut(code, snippets)) {
        status = "error";
      } else {
        if (env instanceof Map) {
          LmcEnv.set((Map<String, Object>) env, saved);
        }
        stopped = false;
        running = id;
        for (int i = 0; i < snippets.size(); i++) {
          int[] snippet = snippets.get(i);
          if (lines) {
            LmcEvents.emit("{\"k\":\"l\",\"id\":" + id + ",\"n\":" + LmcErrors.lineOf(code, snippet[0]) + "}");
          }
          boolean ok = evaluate(id, code, snippet, i == snippets.size() - 1);
          if (stopped || !ok) {
            status = stopped ? "interrupted" : "error";
            break;
          }
        }
      }
    } catch (Exception | LinkageError failed) {
      status = "error";
      error = failed.getClass().getName();
      LmcEvents.tell(error, "the Java runner failed: " + failed + "\n");
    } finally {
      running = -1;
      LmcEnv.restore(saved);
    }
    System.out.flush();
    System.err.flush();
    String name = status.equals("error") && error != null
        ? ",\"n\":" + LmcJson.quote(error, new StringBuilder()) : "";
    LmcEvents.emit("{\"k\":\"d\",\"id\":" + id + ",\"s\":\"" + status + "\",\"p\":false,\"c\":" + runs
        + name + "}");
  }

  /** The [start, end) of each snippet of the cell, or false (and why, on stderr). */
  private static boolean cut(String code, List<int[]> snippets) {
    SourceCodeAnalysis analysis = shell.sourceCodeAnalysis();
    int at = 0;
    while (true) {
      while (at < code.length() && Character.isWhitespace(code.charAt(at))) {
        at++;
      }
      if (at >= code.length()) {
        return true;
      }
      String rest = code.substring(at);
      SourceCodeAnalysis.CompletionInfo info = analysis.analyzeCompletion(rest);
      SourceCodeAnalysis.Completeness done = info.completeness();
      if (done == SourceCodeAnalysis.Completeness.EMPTY) {
        return true;
      }
      if (!done.isComplete() && done != SourceCodeAnalysis.Completeness.UNKNOWN) {
        String why = "reached end of input while parsing: this statement is never finished";
        error = "CompilationError";
        LmcEvents.tell(error, "Error at line " + LmcErrors.lineOf(code, at) + ":\n" + why + "\n");
        return false;
      }
      int end = code.length() - Math.min(info.remaining().length(), rest.length());
      if (rest.startsWith("/") && !rest.startsWith("/*") && !rest.startsWith("//")) {
        error = "CompilationError";
        LmcEvents.tell(error,
            "Error at line " + LmcErrors.lineOf(code, at) + ":\njshell commands (such as /vars) are not run here\n");
        return false;
      }
      snippets.add(new int[] {at, Math.max(end, at + 1)});
      at = Math.max(end, at + 1);
    }
  }

  /** Runs one snippet; false if it failed (told on stderr). The cell's ``last`` shows its value. */
  private static boolean evaluate(long id, String code, int[] snippet, boolean last) {
    List<SnippetEvent> results = shell.eval(code.substring(snippet[0], snippet[1]));
    long line = LmcErrors.lineOf(code, snippet[0]);
    for (SnippetEvent result : results) {
      LmcErrors.remember(result.snippet().id(), id, line);
    }
    boolean ok = true;
    for (SnippetEvent result : results) {
      if (result.causeSnippet() != null) {
        continue;
      }
      if (result.status() == Snippet.Status.REJECTED) {
        ok = false;
        error = "CompilationError";
        LmcEvents.tell(error, shell.diagnostics(result.snippet())
            .filter(Diag::isError)
            .map(diag -> LmcErrors.compileError(code, snippet, diag))
            .collect(Collectors.joining()));
      } else if (result.exception() != null) {
        JShellException thrown = result.exception();
        error = thrown instanceof EvalException
            ? ((EvalException) thrown).getExceptionClassName() : thrown.getClass().getName();
        if (!stopped) {
          StringBuilder told = new StringBuilder();
          LmcErrors.describe(shell, result.exception(), told, id, "Exception ");
          LmcEvents.tell(error, told.toString());
        }
        ok = false;
      } else if (result.snippet() instanceof DeclarationSnippet
          && result.status() != Snippet.Status.VALID) {
        DeclarationSnippet declared = (DeclarationSnippet) result.snippet();
        String missing = shell.unresolvedDependencies(declared).collect(Collectors.joining(", "));
        if (!missing.isEmpty()) {
          System.err.println(
              "note: " + declared.name() + " cannot be used until " + missing + " is declared");
        }
      } else if (last && result.value() != null && RESULTS.contains(result.snippet().subKind())
          && !code.substring(snippet[0], snippet[1]).strip().endsWith(";")) {
        LmcEvents.value(result.value() + "\n");
      }
    }
    return ok;
  }
}

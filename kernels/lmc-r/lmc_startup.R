# Runs once inside an lmc-runtime R kernel, then starts IRkernel.
#
# Everything lives inside local(): nothing is left in the user's workspace.
#
# Active line, out of band
# ------------------------
# IRkernel runs a cell with evaluate::evaluate(), which calls its output
# handler's `source` function once per top-level expression, just before
# running it. The `evaluate` that IRkernel sees is wrapped: for a user's cell
# whose request metadata carries `lmc_active_line: true`, the wrapper adds a
# `source` handler that publishes an `lmc_active_line` message on IOPub,
# parented to the running request, with the 1-based line the expression starts
# on. The code itself runs unchanged.
#
# Interrupts
# ----------
# An interrupt outside the evaluation of a cell (while IRkernel handles the
# request around it) ends R. The wrapper publishes `lmc_begun` first, from
# inside IRkernel's handler of interrupts; the runtime sends no interrupt
# before it.
#
# Input
# -----
# Without `allow_stdin` (the host has no input callback) readline() fails at
# once with a clear error instead of waiting for an answer that never comes.
# With it, each input request is also announced on IOPub as
# `lmc_input_request`, so it cannot be lost to a stdin connection that is
# still being set up; output printed before the prompt is flushed first.
# IRkernel waits for the answer in zmq.poll, where an interrupt can go unseen
# (R takes it only every so many evaluations). So a host that stops a run
# waiting for input interrupts it, then answers "\x04" (Jupyter's end of
# input): the answer wakes the poll, and Sys.sleep() here takes the interrupt
# at once. A "\x04" with no interrupt behind it reads as end of input ("").
#
# Output
# ------
# evaluate collects a top-level expression's output and sends it when the
# expression ends. So that output streams and is never lost, what was printed
# so far is sent at once by flush.console(), before every Sys.sleep(), and when
# an interrupt (a timeout, or interrupt()) stops the code.
#
# IRkernel ends each message() with a second newline; it is sent as it is.
#
# Environment
# -----------
# A request whose metadata carries `lmc_env` (names to values) runs with those
# variables set (Sys.setenv, so system() children see them); on.exit restores
# each, or unsets it again, however the cell ends (error, interrupt).
#
# Errors
# ------
# IRkernel names every error `ERROR`. The error handler is wrapped: the error
# message and the execute_reply name the condition's class instead (its first:
# `simpleError` for stop("..."), `rlang_error` for rlang's abort()).
#
# Plots
# -----
# PNG only, 7 x 5 inches at 100 dpi (700 x 500 pixels).

local({
  ns <- asNamespace("IRkernel")
  imports <- parent.env(ns)
  original_evaluate <- get("evaluate", envir = imports)
  replace_in_package <- get("replace_in_package", envir = ns)

  options(
    jupyter.plot_mimetypes = "image/png",
    repr.plot.width = 7,
    repr.plot.height = 5,
    repr.plot.res = 100,
    warn = 1,
    jupyter.rich_display = FALSE
  )

  # The first line of each row evaluate::parse_all() makes, NA for rows that
  # hold no expression (blank lines, comments).
  row_lines <- function(input) {
    parsed <- tryCatch(evaluate:::parse_all(input, NULL, TRUE), error = function(e) NULL)
    if (is.null(parsed) || !is.null(attr(parsed, "PARSE_ERROR"))) {
      return(integer())
    }
    vapply(parsed$expr, function(expr) {
      refs <- attr(expr, "srcref")
      if (is.null(expr) || length(refs) == 0L) NA_integer_ else as.integer(refs[[1L]][[1L]])
    }, integer(1L))
  }

  track_lines <- function(handler, input, request, send) {
    lines <- row_lines(input)
    row <- 0L
    last <- NA_integer_
    show_source <- handler$source
    handler$source <- function(src) {
      row <<- row + 1L
      line <- if (row <= length(lines)) lines[[row]] else NA_integer_
      if (!is.na(line) && !identical(line, last)) {
        last <<- line
        send("lmc_active_line", request, "iopub", list(line = line))
      }
      show_source(src)
    }
    handler
  }

  # IRkernel adds a newline to each message, which already ends with its own:
  # a message is sent as it is.
  exact_messages <- function(handler, request, send) {
    handler$message <- function(m) {
      send("stream", request, "iopub", list(name = "stderr", text = conditionMessage(m)))
    }
    handler
  }

  # The error (IOPub, and the execute_reply) names the condition's class.
  named_errors <- function(handler, executor) {
    handle_error <- handler$error
    handler$error <- function(e) {
      name <- class(e)[[1L]]
      send <- executor$send_response
      executor$send_response <- function(msg_type, parent, channel, content) {
        if (identical(msg_type, "error")) content$ename <- name
        send(msg_type, parent, channel, content)
      }
      on.exit(executor$send_response <- send, add = TRUE)
      handle_error(e)
      err <- executor$err
      if (!is.null(err$ename)) {
        err$ename <- name
        executor$err <- err
      }
    }
    handler
  }

  # flush.console() sends what the cell printed so far, at once.
  flush_console <- function() invisible(evaluate::flush_console())

  # Sys.sleep() first sends what was printed before it: a loop that prints,
  # then waits, streams.
  original_sleep <- base::Sys.sleep
  sleep_flushed <- function(time) {
    evaluate::flush_console()
    original_sleep(time)
  }

  no_input <- function(prompt = "") {
    stop("input is not available: this execution has no input callback", call. = FALSE)
  }

  announced_input <- function(readline, request, send) {
    function(prompt = "") {
      evaluate::flush_console()
      send("lmc_input_request", request, "iopub", list(prompt = prompt, password = FALSE))
      value <- readline(prompt)
      if (identical(value, "\x04")) {
        original_sleep(5)
        value <- ""
      }
      value
    }
  }

  # Puts back the variables `old` (Sys.getenv(unset = NA)) names: NA is unset.
  restore_env <- function(old) {
    if (any(!is.na(old))) do.call(Sys.setenv, as.list(old[!is.na(old)]))
    if (any(is.na(old))) Sys.unsetenv(names(old)[is.na(old)])
  }

  evaluate_for_lmc <- function(input, envir = parent.frame(), ...,
                               output_handler = evaluate:::default_output_handler) {
    caller <- parent.frame()
    if (identical(envir, globalenv()) && exists("current_request", envir = caller)) {
      request <- get("current_request", envir = caller)
      send <- get("send_response", envir = caller)
      # From here on an interrupt is IRkernel's to take: the runtime waits for this.
      send("lmc_begun", request, "iopub", list())
      env <- request$metadata$lmc_env
      if (length(env)) {
        old <- Sys.getenv(names(env), unset = NA, names = TRUE)
        on.exit(restore_env(old), add = TRUE)
        do.call(Sys.setenv, env)
      }
      if (isTRUE(request$content$allow_stdin)) {
        ask <- announced_input(get(".self", envir = caller)$readline, request, send)
        replace_in_package("base", "readline", ask)
      } else {
        replace_in_package("base", "readline", no_input)
      }
      replace_in_package("utils", "flush.console", flush_console)
      replace_in_package("base", "Sys.sleep", sleep_flushed)
      output_handler <- exact_messages(output_handler, request, send)
      output_handler <- named_errors(output_handler, get(".self", envir = caller))
      if (isTRUE(request$metadata$lmc_active_line)) {
        output_handler <- track_lines(output_handler, input, request, send)
      }
    }
    # A calling handler runs before the interrupt unwinds evaluate's frames,
    # while the output it captured can still be sent.
    withCallingHandlers(
      original_evaluate(input, envir = envir, ..., output_handler = output_handler),
      interrupt = function(cond) try(evaluate::flush_console(), silent = TRUE)
    )
  }

  unlockBinding("evaluate", imports)
  assign("evaluate", evaluate_for_lmc, envir = imports)
  lockBinding("evaluate", imports)
})

IRkernel::main(commandArgs(trailingOnly = TRUE)[[1L]])

# Sourced by .ci/test and .ci/run: a line every 60 s while a long step runs, stopped without leaving a child
# behind. (A `( while sleep 60; do echo; done ) &` killed by PID leaves its `sleep` running for up to 60 s, and
# that sleep holds the pipe's write end open: `bash .ci/test | tee log` then waited up to a minute after the last
# line.) The loop's own `sleep` is killed by the loop's TERM trap, so stopping returns at once.
#   heartbeat_start "message prefix"  (the elapsed seconds are appended; to stderr unless HEARTBEAT_FD says)
#   heartbeat_stop
heartbeat_start() {
  local label=$1 t0=$SECONDS
  (
    s=
    trap '[ -n "$s" ] && kill "$s" 2>/dev/null; exit 0' TERM
    while :; do
      sleep 60 & s=$!
      wait "$s"
      echo "$label ($((SECONDS - t0)) s)" >&"${HEARTBEAT_FD:-2}"
    done
  ) &
  heartbeat_pid=$!
}
heartbeat_stop() {
  [ -n "${heartbeat_pid:-}" ] || return 0
  kill "$heartbeat_pid" 2>/dev/null
  wait "$heartbeat_pid" 2>/dev/null
  heartbeat_pid=
}

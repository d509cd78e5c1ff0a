# latscope fleet: one run of the probe on a host, in the fleet's private directory DIR
# (docs/fleet.md). Copied there with the probe and run with /bin/sh:
#     sh DIR/run.sh DIR SECONDS OUT BENCH [OPTION...]
# runs DIR/latscope-probe BENCH OPTION... -o DIR/OUT. While it runs, DIR/probe.pid holds the
# pid the clean-up stops (SIGINT, then SIGKILL): with timeout(1), which leads a process group
# of its own and passes the signal on, timeout's; else the probe's. After SECONDS timeout
# sends the probe SIGINT, as Ctrl-C would (exit 124). The probe's exit status is the script's.
set -u
dir=$1 secs=$2 out=$3
shift 3
cd "$dir" || exit 2
if timeout 5 true 2>/dev/null; then
  set -- timeout -s INT "$secs" ./latscope-probe "$@" -o "$dir/$out"
else
  set -- ./latscope-probe "$@" -o "$dir/$out"
fi
# the pid file is written whole (rename), then the shell becomes the command
sh -c 'echo $$ >probe.pid.tmp && mv -f probe.pid.tmp probe.pid && exec "$@"' run "$@"
rc=$?
rm -f probe.pid
exit $rc

#!/usr/bin/env bash
# A throw-away single-node Slurm (munged + slurmctld + slurmd, as root) with everything — the
# munge key and socket, slurm.conf, state, spool, logs — in DIR, so it touches nothing of the
# machine's own configuration. For tests and trying the recipe on one machine:
#   tools/slurm/local_cluster.sh start DIR   # then: export SLURM_CONF=DIR/slurm.conf
#   tools/slurm/local_cluster.sh stop DIR
# start waits (up to 60 s) until the node is idle; it fails with the daemons' logs otherwise.
set -euo pipefail
cmd="${1:-}" dir="${2:-}"
if [ -z "$cmd" ] || [ -z "$dir" ]; then echo "usage: $0 start|stop DIR" >&2; exit 2; fi
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

alive() {  # a zombie (no init reaping it, in some containers) counts as gone
  [ -r "/proc/$1/stat" ] && [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ]
}

stop() {  # each daemon by its pid file, and waits (10 s at most) until it has written its state and left
  for p in slurmd slurmctld munged; do
    [ -f "$dir/$p.pid" ] || continue
    pid="$(cat "$dir/$p.pid")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do alive "$pid" || break; sleep 0.1; done
    rm -f "$dir/$p.pid"
  done
}

if [ "$cmd" = stop ]; then stop; exit 0; fi
if [ "$cmd" != start ]; then echo "usage: $0 start|stop DIR" >&2; exit 2; fi
for b in munged mungekey slurmctld slurmd sbatch sinfo; do
  command -v "$b" >/dev/null || { echo "local_cluster: $b not found (apt-get install slurm-wlm munge)" >&2; exit 3; }
done
[ "$(id -u)" = 0 ] || { echo "local_cluster: must run as root (the daemons run as root here)" >&2; exit 3; }

mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
chmod 700 "$dir/munge"
[ -f "$dir/munge/munge.key" ] || mungekey -c -k "$dir/munge/munge.key" >/dev/null
munged -f --key-file "$dir/munge/munge.key" --socket "$dir/munge/munge.sock" --pid-file "$dir/munged.pid" \
  --log-file "$dir/munged.log" --seed-file "$dir/munge/munge.seed"
# Ports from this shell's pid: several test clusters on one machine do not collide.
base=$((20000 + ($$ % 20000) * 2))
host="$(hostname -s)"
cpus="$(nproc)"
cat >"$dir/slurm.conf" <<CONF
ClusterName=ckjit-local
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$base
SlurmdPort=$((base + 1))
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$dir/slurm.conf"
slurmctld -i
slurmd
for _ in $(seq 1 60); do
  if sinfo -h -o %t 2>/dev/null | grep -qx 'idle'; then echo "local_cluster: up (SLURM_CONF=$SLURM_CONF)"; exit 0; fi
  sleep 1
done
echo "local_cluster: the node did not come up in 60 s" >&2
tail -n 20 "$dir"/*.log >&2 || true
stop
exit 1

#!/usr/bin/env bash
# A real single-node SLURM on this machine, for trying `--cluster slurm` and for
# the tests: controller and compute node on loopback, all state in STATE_DIR.
#
#   scripts/slurm-single-node.sh up STATE_DIR     install if missing (root, apt), start, wait for "idle"
#   scripts/slurm-single-node.sh down STATE_DIR   cancel every job, stop the daemons it started
#
# After `up`, point the SLURM commands (and dask-jobqueue) at it:
#   export SLURM_CONF=STATE_DIR/slurm.conf
# Needs root (slurmd runs jobs as their user; munged runs as the munge user).
# Ports: SLURMCTLD_PORT (default 6817), SLURMD_PORT (default 6818).
set -euo pipefail

action=${1:-}
state=${2:-}
if [ -z "$action" ] || [ -z "$state" ]; then
    echo "usage: $0 up|down STATE_DIR" >&2
    exit 2
fi
mkdir -p "$state"
state=$(cd "$state" && pwd)
conf=$state/slurm.conf
export SLURM_CONF=$conf
host=$(hostname -s)

install_packages() {
    if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sbatch >/dev/null \
            && command -v munged >/dev/null; then
        return
    fi
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
        echo "$0: SLURM is not installed; as root on Debian: apt-get install slurmctld slurmd slurm-client munge" >&2
        exit 1
    fi
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        slurmctld slurmd slurm-client munge >/dev/null
}

munge_works() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }

start_munge() {
    if munge_works; then
        return  # a munged already serves this machine: share it, leave it running
    fi
    if [ ! -s /etc/munge/munge.key ]; then
        mkdir -p /etc/munge
        dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
        chown munge:munge /etc/munge/munge.key
        chmod 400 /etc/munge/munge.key
    fi
    # munged refuses to run as root: run it as its own user, with its own dirs.
    install -d -o munge -g munge -m 0755 /run/munge
    install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge
    # --force only when a plain start fails (a stale socket lock of a killed munged).
    runuser -u munge -- /usr/sbin/munged 2>/dev/null || runuser -u munge -- /usr/sbin/munged --force
    for _ in $(seq 50); do munge_works && break; sleep 0.1; done
    munge_works || { echo "$0: munged did not start (see /var/log/munge/munged.log)" >&2; exit 1; }
    cat /run/munge/munged.pid > "$state/munged.started"
}

write_conf() {
    local cpus mem
    cpus=$(nproc)
    mem=$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')
    mem=$(( ${mem:-2048} * 9 / 10 ))
    mkdir -p "$state/spool" "$state/ctld" "$state/log"
    cat > "$conf" <<EOF
# Written by scripts/slurm-single-node.sh: one node, loopback only.
ClusterName=bestemshe
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=${SLURMCTLD_PORT:-6817}
SlurmdPort=${SLURMD_PORT:-6818}
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/log/slurmctld.log
SlurmdLogFile=$state/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
MailProg=/bin/true
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
KillWait=5
InactiveLimit=0
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
}

stop_pidfile() {  # SIGTERM the daemon in a pid file, wait up to 10 s
    local file=$1 pid
    [ -s "$file" ] || return 0
    pid=$(cat "$file")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$file"
}

case $action in
up)
    install_packages
    start_munge
    write_conf
    slurmctld -f "$conf"
    slurmd -f "$conf" -N "$host"
    for _ in $(seq 150); do
        if [ "$(sinfo -h -o %t 2>/dev/null | head -n1)" = idle ]; then
            echo "SLURM is up: export SLURM_CONF=$conf"
            exit 0
        fi
        sleep 0.2
    done
    echo "$0: the node did not become idle; logs in $state/log" >&2
    sinfo >&2 || true
    exit 1
    ;;
down)
    if [ -f "$conf" ]; then
        jobs=$(squeue -h -o %i 2>/dev/null || true)
        if [ -n "$jobs" ]; then
            # shellcheck disable=SC2086
            scancel $jobs 2>/dev/null || true
            for _ in $(seq 50); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.2; done
        fi
    fi
    stop_pidfile "$state/slurmd.pid"
    stop_pidfile "$state/slurmctld.pid"
    stop_pidfile "$state/munged.started"
    echo "SLURM is down"
    ;;
*)
    echo "usage: $0 up|down STATE_DIR" >&2
    exit 2
    ;;
esac

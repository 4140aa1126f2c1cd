#!/bin/sh
# slurm_cluster.sh - a real Slurm cluster of N emulated nodes on this machine, for the Slurm
# tests: munged, slurmctld and one slurmd per node (n1..nN: slurmd -N nK, its own port, %n in
# its log, pid, spool and TmpFS paths; Slurm's "emulate a larger cluster" setup), each node
# with 2 CPUs and 2 fake GPUs (gres.conf File= entries: character devices made with mknod,
# the same device as /dev/null), everything in one private directory. Sourced by
# slurm_test.sh and slurm_multinode.sh:
#   slurm_start DIR [N]        start N nodes (default 1); exports SLURM_CONF; daemons write DIR/*.log
#   slurm_stop DIR             cancel the jobs, stop the daemons, then end every process left
#                              of this cluster (SLURM_CONF=DIR/slurm.conf in its environment), by PID
#   slurm_crash_node DIR NODE  a node failure: SIGKILL to NODE's slurmd and to everything of the
#                              cluster running there, then NODE marked down (what slurmctld does
#                              after SlurmdTimeout)
#   slurm_state JOB, slurm_restarts JOB   its JobState and Restarts (empty while scontrol cannot say)
#   slurm_in_state JOB STATE..., slurm_ended JOB   conditions for the waits
#   slurm_wait_job JOB LOG CMD...        poll until CMD succeeds, while JOB makes progress
#   slurm_wait_for SECONDS WHAT CMD...   poll until CMD succeeds, at most SECONDS
#   slurm_step TEXT            print TEXT with the seconds since slurm_start
# Waits poll every half second; slurm_wait_job fails only after SLURM_STALL_S seconds (default
# 300) without progress (a change of the job's state, growth of its log) or SLURM_WAIT_CAP_S
# (default 1200) in all, so a loaded machine makes them slower, never wrong. A failed client
# command (a timeout under load) counts as "not yet", never as an answer. Needs root, slurm-wlm
# and munge.
# SLURM_FAKE_GPUS is 1 after slurm_start when the fake GPUs could be made (mknod), else 0.

# A port is busy while any TCP socket holds it, listening or not (a connection's local port too).
slurm_port_busy() { command -v ss >/dev/null 2>&1 && [ -n "$(ss -Htan "sport = :$1" 2>/dev/null)" ]; }

slurm_start() {
  d=$1 sc_n=${2:-1} SLURM_T0=$(date +%s)
  mkdir -p "$d/state" "$d/munge" || return 1
  chown munge:munge "$d/munge" && chmod 700 "$d/munge"
  key=/etc/munge/munge.key
  if [ ! -r "$key" ]; then
    key="$d/munge/munge.key"
    dd if=/dev/urandom of="$key" bs=1 count=128 2>/dev/null && chown munge:munge "$key" && chmod 400 "$key"
  fi
  # munged as the munge user with its own socket, so an existing munged is left alone.
  su -s /bin/sh munge -c "/usr/sbin/munged --key-file=$key --socket=$d/munge/munge.socket --pid-file=$d/munge/munged.pid --log-file=$d/munge/munged.log --seed-file=$d/munge/seed --force" ||
    { echo "slurm_cluster: munged did not start"; return 1; }
  host=$(hostname -s)
  # The controller's port and one port per node: a block of 10 ports of this process's own
  # (test clusters started at the same time by make -j have nearby PIDs), none of them held
  # already, outside the kernel's ephemeral range: there any outgoing connection (an MPI rank
  # of a test running beside this one) may take a port as its local one between the check and
  # the daemon's bind, which then fails with "Address already in use" (the likely cause of a
  # CI failure on 2026-12-07).
  [ "$sc_n" -ge 1 ] && [ "$sc_n" -le 9 ] || { echo "slurm_cluster: 1 to 9 nodes, not '$sc_n'"; return 1; }
  # (read whole: dash's read takes a byte at a time, and the file gives nothing past its first read)
  sc_range=$(cat /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
  sc_lo=${sc_range%%[!0-9]*} sc_hi=${sc_range##*[!0-9]}
  case "$sc_lo.$sc_hi" in *[!0-9.]* | .* | *.) sc_lo=32768 sc_hi=60999 ;; esac
  if [ "$sc_lo" -ge 12000 ]; then sc_min=10000 sc_max=$((sc_lo - 10)); else sc_min=$((sc_hi + 1)) sc_max=65520; fi
  [ "$sc_max" -gt "$sc_min" ] || { echo "slurm_cluster: no ports outside the ephemeral range $sc_lo - $sc_hi"; return 1; }
  port=$((sc_min + $$ % ((sc_max - sc_min) / 10) * 10)) sc_try=0
  while :; do
    sc_busy=0 k=0
    while [ $k -le "$sc_n" ]; do slurm_port_busy $((port + k)) && sc_busy=1; k=$((k + 1)); done
    [ $sc_busy -eq 0 ] && break
    sc_try=$((sc_try + 1)); [ $sc_try -lt 50 ] || { echo "slurm_cluster: no free ports near $port"; return 1; }
    port=$((port + 10)); [ $port -le "$sc_max" ] || port=$sc_min
  done
  cat > "$d/slurm.conf" <<CONF
ClusterName=kvaltest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmctldPort=$port
AuthType=auth/munge
AuthInfo=socket=$d/munge/munge.socket,cred_expire=10
CredType=cred/munge
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
TmpFS=$d/tmp/%n
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd-%n.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd-%n.log
SlurmdParameters=config_overrides
GresTypes=gpu
MpiDefault=pmix
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobRequeue=1
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1,bf_interval=1
MinJobAge=3600
KillWait=10
MessageTimeout=60
BatchStartTimeout=120
CONF
  # Node k listens on port + k; its PMIx client directories live under its own TmpFS (the
  # emulated nodes share /tmp, and job ids restart at 1 in every test cluster).
  : > "$d/gres.conf"
  SLURM_FAKE_GPUS=1
  k=1
  while [ $k -le "$sc_n" ]; do
    mkdir -p "$d/spool/n$k" "$d/tmp/n$k" "$d/gpu/n$k" || return 1
    for g in 0 1; do
      [ -c "$d/gpu/n$k/nvidia$g" ] || mknod "$d/gpu/n$k/nvidia$g" c 1 3 2>/dev/null || SLURM_FAKE_GPUS=0
    done
    k=$((k + 1))
  done
  k=1
  while [ $k -le "$sc_n" ]; do
    gres=""
    if [ $SLURM_FAKE_GPUS -eq 1 ]; then
      gres=" Gres=gpu:2"
      echo "NodeName=n$k Name=gpu File=$d/gpu/n$k/nvidia[0-1]" >> "$d/gres.conf"
    fi
    echo "NodeName=n$k NodeHostname=$host NodeAddr=127.0.0.1 Port=$((port + k)) CPUs=2$gres State=UNKNOWN" >> "$d/slurm.conf"
    k=$((k + 1))
  done
  echo "PartitionName=test Nodes=n[1-$sc_n] Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES" >> "$d/slurm.conf"
  # PMIx fences go around a ring of the nodes. With the default ("mixed"), a fence without data
  # takes Slurm's tree, and on these emulated nodes (one host) that tree completes on each
  # node alone (slurmd debug log: "local delivery" right after the node's own contribution,
  # no message between the steps' daemons). Open MPI's closing barrier of MPI_Init is such a
  # fence: a rank of n1 then sent its first message (kval's broadcast of the deck) to a rank of
  # n2 still waiting for the modex, which crashed inside MPI_Init (1 launch in about 200).
  echo "PMIxCollFence=ring" > "$d/mpi.conf"
  SLURM_CONF="$d/slurm.conf"
  export SLURM_CONF SLURM_FAKE_GPUS
  # The emulated nodes share one kernel: Open MPI's shared-memory transport names its segments
  # by host name and node-local rank, so ranks of two nodes would share (and corrupt) one
  # segment. TCP between all ranks; jobs inherit this (sbatch --export=ALL). Up to 8 ranks share
  # the machine's cores: a rank waiting in a collective yields instead of spinning. Every
  # emulated node is this machine, so the TCP transport uses the loopback interface only: an
  # outward interface (a sandbox's virtual NIC) can refuse or stall connections to its own
  # address under load, which failed the wire-up of a 2-node step.
  OMPI_MCA_btl=self,tcp OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_btl_tcp_if_include=lo
  export OMPI_MCA_btl OMPI_MCA_mpi_yield_when_idle OMPI_MCA_btl_tcp_if_include
  /usr/sbin/slurmctld -f "$SLURM_CONF" || { echo "slurm_cluster: slurmctld did not start"; cat "$d/slurmctld.log"; return 1; }
  k=1
  while [ $k -le "$sc_n" ]; do
    /usr/sbin/slurmd -f "$SLURM_CONF" -N "n$k" || { echo "slurm_cluster: slurmd n$k did not start"; cat "$d/slurmd-n$k.log"; return 1; }
    k=$((k + 1))
  done
  # Until every node is idle, or a daemon has given up (a port taken meanwhile, a bad configuration).
  if ! slurm_wait_for 300 "$sc_n node(s) idle" slurm_up_or_failed "$d" "$sc_n" || slurm_daemon_failed "$d"; then
    echo "slurm_cluster: the cluster did not come up"; sinfo; tail -n 20 "$d/slurmctld.log" "$d"/slurmd-n*.log
    return 1
  fi
}

# slurm_step TEXT: "-- [N s] TEXT", N the seconds since slurm_start (the tests' own timing).
slurm_step() { echo "-- [$(($(date +%s) - SLURM_T0)) s] $*"; }

slurm_nodes_idle() { [ "$(sinfo -h -N -o '%T' 2>/dev/null | grep -c '^idle$')" -eq "$1" ]; }
slurm_daemon_failed() { grep -qE 'fatal:|Unable to bind listen port' "$1/slurmctld.log" "$1"/slurmd-n*.log 2>/dev/null; }
slurm_up_or_failed() { slurm_nodes_idle "$2" || slurm_daemon_failed "$1"; }

# Live processes of the cluster of DIR (SLURM_CONF=DIR/slurm.conf in the environment they were
# started with: daemons, job steps, tasks), this shell excepted; with NODE, only those on NODE: a job's
# own processes name it (SLURMD_NODENAME), a slurmstepd holds a socket in NODE's spool directory.
slurm_pids() {
  sp_socks=""
  [ -n "${2:-}" ] && sp_socks=$(awk -v p="$1/spool/$2/" 'index($8, p) == 1 { print "socket:[" $7 "]" }' /proc/net/unix)
  for sp in $(grep -lszxF "SLURM_CONF=$1/slurm.conf" /proc/[0-9]*/environ); do
    sp=${sp#/proc/} && sp=${sp%/environ}
    [ "$sp" = "$$" ] && continue
    # the grep above (it inherits SLURM_CONF) has ended by now; a zombie is gone already
    sp_state=$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$sp/status" 2>/dev/null)
    [ -n "$sp_state" ] && [ "$sp_state" != Z ] || continue
    if [ -n "${2:-}" ] && ! grep -qszxF "SLURMD_NODENAME=$2" "/proc/$sp/environ"; then
      sp_on=0
      for fd in /proc/"$sp"/fd/*; do
        fl=$(readlink "$fd" 2>/dev/null) || continue
        case $fl in socket:*) printf '%s\n' "$sp_socks" | grep -qxF "$fl" && { sp_on=1; break; } ;; esac
      done
      [ $sp_on -eq 1 ] || continue
    fi
    echo "$sp"
  done
}

# slurm_daemon_kill DIR PIDFILE [SIGNAL]: signal the daemon of PIDFILE when that process is still
# one of this cluster's (its command line names DIR), never a process that reused the number.
slurm_daemon_kill() {
  [ -f "$2" ] || return 0
  sd=$(cat "$2" 2>/dev/null)
  case $({ tr '\0' ' ' < "/proc/$sd/cmdline"; } 2>/dev/null) in *"$1/"*) kill "-${3:-TERM}" "$sd" 2>/dev/null ;; esac
}

slurm_crash_node() {
  slurm_daemon_kill "$1" "$1/slurmd-$2.pid" KILL && rm -f "$1/slurmd-$2.pid"
  slurm_wait_for 300 "every process of node $2 killed" slurm_kill_all "$1" "$2" &&
    slurm_wait_for 300 "node $2 marked down" scontrol update nodename="$2" state=down reason="node lost (test)"
}

# SIGKILL to every process of the cluster (on NODE when given); true once there was none left.
slurm_kill_all() {
  sk=$(slurm_pids "$@")
  [ -z "$sk" ] && return 0
  for sp in $sk; do kill -9 "$sp" 2>/dev/null; done
  return 1
}

slurm_stop() {
  d=$1
  [ -f "$d/slurm.conf" ] || return 0
  if slurm_alive "$d" "$d/slurmctld.pid"; then
    scancel --user=root >/dev/null 2>&1 && slurm_wait_for 60 "the jobs cancelled" slurm_queue_empty >/dev/null
  fi
  for pidfile in "$d"/slurmd-*.pid "$d/slurmctld.pid" "$d/munge/munged.pid"; do slurm_daemon_kill "$d" "$pidfile"; done
  slurm_wait_for 30 "the daemons stopped" slurm_daemons_gone "$d" >/dev/null
  slurm_wait_for 30 "the cluster's processes killed" slurm_kill_all "$d" >/dev/null
  for pidfile in "$d"/slurmd-*.pid "$d/slurmctld.pid" "$d/munge/munged.pid"; do slurm_daemon_kill "$d" "$pidfile" KILL; done
  return 0
}

slurm_queue_empty() { q=$(squeue -h -o %i 2>/dev/null) && [ -z "$q" ]; }

# slurm_alive DIR PIDFILE...: one of these daemons of the cluster of DIR still runs.
slurm_alive() {
  sa_dir=$1; shift
  for pidfile in "$@"; do
    [ -f "$pidfile" ] || continue
    sd=$(cat "$pidfile" 2>/dev/null)
    case $({ tr '\0' ' ' < "/proc/$sd/cmdline"; } 2>/dev/null) in *"$sa_dir/"*) return 0 ;; esac
  done
  return 1
}
slurm_daemons_gone() { ! slurm_alive "$1" "$1"/slurmd-*.pid "$1/slurmctld.pid" "$1/munge/munged.pid"; }

slurm_state() { scontrol show job -o "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
slurm_restarts() { scontrol show job -o "$1" 2>/dev/null | sed -n 's/.* Restarts=\([0-9]*\).*/\1/p'; }

# slurm_in_state JOB STATE...: the job is in one of the states; slurm_ended JOB: in a final one.
slurm_in_state() {
  ss_st=$(slurm_state "$1"); shift
  for s in "$@"; do [ "$ss_st" = "$s" ] && return 0; done
  return 1
}
slurm_ended() { slurm_in_state "$1" COMPLETED FAILED CANCELLED TIMEOUT NODE_FAIL OUT_OF_MEMORY BOOT_FAIL DEADLINE PREEMPTED; }

# slurm_wait_for SECONDS WHAT CMD...: until CMD succeeds, at most SECONDS (a condition that
# becomes true once; no progress to measure).
slurm_wait_for() {
  sw_limit=$1 sw_what=$2; shift 2
  sw_start=$(date +%s)
  until "$@"; do
    [ $(($(date +%s) - sw_start)) -lt "$sw_limit" ] ||
      { echo "slurm_cluster: gave up waiting for $sw_what after $(($(date +%s) - sw_start)) s"; return 1; }
    sleep 0.5
  done
}

# slurm_wait_job JOB LOG CMD...: until CMD succeeds (e.g. slurm_ended JOB); progress is a change
# of JOB's state or restart count, or a longer LOG (kval prints progress every few seconds).
slurm_wait_job() {
  wj=$1 wlog=$2; shift 2
  wstart=$(date +%s) wprev=""
  wlast=$wstart
  until "$@"; do
    wst="$(slurm_state "$wj")/$(slurm_restarts "$wj")/$({ wc -c < "$wlog"; } 2>/dev/null)"
    wnow=$(date +%s)
    [ "$wst" = "$wprev" ] || { wprev=$wst; wlast=$wnow; }
    if [ $((wnow - wlast)) -ge "${SLURM_STALL_S:-300}" ] || [ $((wnow - wstart)) -ge "${SLURM_WAIT_CAP_S:-1200}" ]; then
      echo "slurm_cluster: job $wj (state/restarts/log bytes $wst) after $((wnow - wstart)) s, $((wnow - wlast)) s without progress; waited for: $*"
      scontrol show job "$wj"; [ -f "$wlog" ] && tail -n 20 "$wlog"
      return 1
    fi
    sleep 0.5
  done
}

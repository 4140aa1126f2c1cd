#!/bin/sh
# slurm_cluster.sh - start and stop a real one-node Slurm cluster (munged, slurmctld,
# slurmd) in a private directory, for the Slurm tests. Sourced by slurm_test.sh:
#   slurm_start DIR   -> exports SLURM_CONF; daemons write DIR/*.log and DIR/*.pid
#   slurm_stop DIR    -> stops the daemons by PID
# Needs root and the Debian packages slurm-wlm and munge.

slurm_start() {
  d=$1
  mkdir -p "$d/state" "$d/spool" "$d/munge" || return 1
  chown munge:munge "$d/munge" && chmod 700 "$d/munge"
  key=/etc/munge/munge.key
  if [ ! -r "$key" ]; then
    key="$d/munge/munge.key"
    dd if=/dev/urandom of="$key" bs=1 count=128 2>/dev/null && chown munge:munge "$key" && chmod 400 "$key"
  fi
  # munged as the munge user with its own socket, so an existing munged is left alone.
  su -s /bin/sh munge -c "/usr/sbin/munged --key-file=$key --socket=$d/munge/munge.socket --pid-file=$d/munge/munged.pid --log-file=$d/munge/munged.log --seed-file=$d/munge/seed --force" ||
    { echo "slurm_cluster: munged did not start"; return 1; }
  node=$(slurmd -C | sed -n 's/^\(NodeName=.*\)$/\1/p' | sed 's/ UpTime=.*//')
  nodename=$(echo "$node" | sed 's/^NodeName=\([^ ]*\).*/\1/')
  port=$((20000 + $$ % 20000))
  cat > "$d/slurm.conf" <<CONF
ClusterName=kvaltest
SlurmctldHost=$nodename
SlurmUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$d/munge/munge.socket,cred_expire=10
CredType=cred/munge
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd.log
MpiDefault=pmix
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobRequeue=1
SchedulerType=sched/backfill
$node State=UNKNOWN
PartitionName=test Nodes=$nodename Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
  # PMIx client directories of this cluster only: job ids restart at 1 in every test cluster,
  # and a directory left by an earlier cluster's step N.0 would make step N.0 fail to launch.
  mkdir -p "$d/pmix"
  echo "PMIxCliTmpDirBase=$d/pmix" > "$d/mpi.conf"
  SLURM_CONF="$d/slurm.conf"
  export SLURM_CONF
  /usr/sbin/slurmctld -f "$SLURM_CONF" || { echo "slurm_cluster: slurmctld did not start"; cat "$d/slurmctld.log"; return 1; }
  /usr/sbin/slurmd -f "$SLURM_CONF" || { echo "slurm_cluster: slurmd did not start"; cat "$d/slurmd.log"; return 1; }
  i=0
  while [ $i -lt 60 ]; do
    if sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then return 0; fi
    sleep 0.5; i=$((i + 1))
  done
  echo "slurm_cluster: the node never became idle"; sinfo; tail -n 20 "$d/slurmctld.log" "$d/slurmd.log"
  return 1
}

slurm_stop() {
  d=$1
  for pidfile in "$d/slurmd.pid" "$d/slurmctld.pid" "$d/munge/munged.pid"; do
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null
  done
  sleep 0.5
  for pidfile in "$d/slurmd.pid" "$d/slurmctld.pid" "$d/munge/munged.pid"; do
    [ -f "$pidfile" ] && kill -9 "$(cat "$pidfile")" 2>/dev/null
  done
  return 0
}

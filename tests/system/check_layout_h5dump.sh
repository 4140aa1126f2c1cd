#!/bin/sh
# check_layout_h5dump.sh - the essentials of the kval HDF5 layout checked with h5dump alone (no
# Python): root attributes, /ranks with one row per rank, every family group with its
# attributes, the status enum (the named type /case_status, int8 with the names of
# src/core/dtype.c), the fixed datasets (checksum among them) and every result field of
# src/core/result.h with the phase datasets of src/core/timing.h (KV_PHASES), a DIMENSION_LIST
# on every per-cell dataset and the dimension-scale CLASS on rank, hist_bin and each axis.
# Usage: tests/system/check_layout_h5dump.sh FILE NRANKS     (H5DUMP overrides the h5dump binary)
# Exit 0 when the file conforms, 1 with one line per problem otherwise.

H5DUMP=${H5DUMP:-h5dump}
file=$1
nranks=$2
if [ $# -ne 2 ] || [ ! -f "$file" ]; then
  echo "usage: $0 FILE NRANKS (FILE must exist)" >&2
  exit 1
fi
here=$(cd "$(dirname "$0")" && pwd)
problems=0
bad() {
  echo "check_layout_h5dump: $file: $*" >&2
  problems=$((problems + 1))
}

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
if ! "$H5DUMP" -H "$file" >"$tmp/header" 2>"$tmp/err"; then
  bad "h5dump -H failed: $(head -n 3 "$tmp/err")"
  exit 1
fi

# One line per object of the header: "G|path|,attr,attr," or "D|group|name|type|space|,attr,".
awk '
function push(k, n) { sp++; kind[sp] = k; name[sp] = n; attrs[sp] = ","; typ[sp] = ""; space[sp] = "" }
function gpath(i,   p, j) {
  p = ""
  for (j = 1; j <= i; j++) if (kind[j] == "G") p = (name[j] == "/") ? "" : p "/" name[j]
  return p == "" ? "/" : p
}
function pop() {
  if (kind[sp] == "G") print "G|" gpath(sp) "|" attrs[sp]
  if (kind[sp] == "D") print "D|" gpath(sp - 1) "|" name[sp] "|" typ[sp] "|" space[sp] "|" attrs[sp]
  sp--
}
{
  t = $0; sub(/^ +/, "", t); sub(/ +$/, "", t)
  l = t; opens = gsub(/\{/, "{", l); closes = gsub(/\}/, "}", l)
  if (t ~ /^(GROUP|DATASET|ATTRIBUTE) "/) {
    split(t, part, "\"")
    if (t ~ /^ATTRIBUTE/) attrs[sp] = attrs[sp] part[2] ","
    push(substr(t, 1, 1), part[2])
  } else if (t ~ /^DATATYPE/) {
    if (kind[sp] == "D") typ[sp] = t
    if (opens > closes) push("T", "")
  } else if (t ~ /^DATASPACE/) {
    if (kind[sp] == "D") space[sp] = t
  } else if (t == "}" || t == "};") {
    pop()
  } else {
    if (kind[sp] == "T" && kind[sp - 1] == "D") typ[sp - 1] = typ[sp - 1] " " t
    if (opens > closes) push("X", "")
  }
}' "$tmp/header" >"$tmp/objects"

attr_of() { # attr_of PATH: the value line of a scalar attribute, quotes removed
  "$H5DUMP" -a "$1" "$file" 2>/dev/null | sed -n 's/^ *(0): *//p' | tr -d '"'
}
has_attrs() { # has_attrs WHERE ATTRLIST NAME...
  where=$1 list=$2
  shift 2
  for a in "$@"; do
    case $list in *",$a,"*) ;; *) bad "$where: attribute $a missing" ;; esac
  done
}

# --- root ---
root=$(grep '^G|/|' "$tmp/objects" | cut -d'|' -f3)
has_attrs / "$root" kval_version git_commit command_line deck_text deck_path creation_time mpi_version \
  hdf5_version cuda_runtime cuda_driver slurm_job_id slurm_nodes backend mode seed file_id nranks hdf5_flavour \
  layout_version status_names complete
[ "$(attr_of /nranks)" = "$nranks" ] || bad "/: nranks is '$(attr_of /nranks)', expected $nranks"
version=$(sed -n 's/^#define KV_LAYOUT_VERSION \([0-9]*\)$/\1/p' "$here/../../src/output/internal.h")
[ "$(attr_of /layout_version)" = "$version" ] ||
  bad "/: layout_version is '$(attr_of /layout_version)', expected $version (src/output/internal.h)"

# --- /ranks ---
if grep -q '^G|/ranks|' "$tmp/objects"; then
  for f in rank host local_rank local_size device_index device_name uuid serial pci_bus_id sm_count \
    cc_major cc_minor memory_bytes driver_version runtime_version copy_gbps matrix_tflops fp64_tflops nvml; do
    line=$(grep "^D|/ranks|$f|" "$tmp/objects")
    if [ -z "$line" ]; then bad "/ranks: dataset $f missing"; continue; fi
    case $line in *"SIMPLE { ( $nranks ) / ( $nranks ) }"*) ;; *) bad "/ranks/$f: not one row per rank ($nranks)" ;; esac
    if [ "$f" = rank ]; then want=CLASS; else want=DIMENSION_LIST; fi
    case $line in *",$want,"*) ;; *) bad "/ranks/$f: attribute $want missing" ;; esac
  done
else
  bad "group /ranks missing"
fi

# --- families ---
fields="$(sed -n 's/^ *X(\([a-z_0-9]*\),.*/\1/p' "$here/../../src/core/result.h")
$(sed -n 's/^ *P(X, [a-z_0-9]*, \([a-z_0-9]*\),.*/\1/p' "$here/../../src/core/timing.h")"
[ -n "$fields" ] || bad "cannot read the result fields from $here/../../src/core/result.h"
families=$(grep '^G|' "$tmp/objects" | cut -d'|' -f2 | grep -v '^/$' | grep -v '^/ranks$')
[ -n "$families" ] || bad "no family group"
# the enum's names in value order, from kv_status_name's table in src/core/dtype.c
enum="DATATYPE \"case_status\" H5T_ENUM { H5T_STD_I8LE;$(sed -n '/names\[KV_NSTATUS\] = {/,/};/p' "$here/../../src/core/dtype.c" |
  grep -o '"[a-z_]*"' | awk '{ printf " %s %d;", $0, NR - 1 }') };"
got=$(sed -n '/^   DATATYPE "case_status" H5T_ENUM {/,/^   };/p' "$tmp/header" | tr '\n' ' ' | tr -s ' ' | sed 's/^ //; s/ $//')
[ "$got" = "$enum" ] || bad "/case_status: named status type is '$got', expected '$enum'"
for g in $families; do
  has_attrs "$g" "$(grep "^G|$g|" "$tmp/objects" | cut -d'|' -f3)" axes n_cells n_valid n_skipped n_results
  axes=$(attr_of "$g/axes" | tr ',' ' ')
  [ -n "$axes" ] || bad "$g: empty axes attribute"
  for s in rank hist_bin $axes; do
    line=$(grep "^D|$g|$s|" "$tmp/objects")
    case $line in *",CLASS,"*) ;; *) bad "$g/$s: not a dimension scale (dataset or CLASS attribute missing)" ;; esac
  done
  for d in status fingerprint checksum message hist fp_distinct fp_majority fp_agrees $fields; do
    line=$(grep "^D|$g|$d|" "$tmp/objects")
    if [ -z "$line" ]; then bad "$g: dataset $d missing"; continue; fi
    case $line in *",DIMENSION_LIST,"*) ;; *) bad "$g/$d: no DIMENSION_LIST (dimension scales not attached)" ;; esac
    case $d in fp_distinct | fp_majority) ;;
      *) case $line in *"SIMPLE { ( $nranks, "*) ;; *) bad "$g/$d: first dimension is not rank ($nranks)" ;; esac ;;
    esac
  done
  status=$(grep "^D|$g|status|" "$tmp/objects" | cut -d'|' -f4 | tr -s ' ')
  [ "$status" = 'DATATYPE "/case_status"' ] || bad "$g/status: type is '$status', expected 'DATATYPE \"/case_status\"'"
  message=$(grep "^D|$g|message|" "$tmp/objects" | cut -d'|' -f4)
  case $message in *"STRSIZE 96;"*) ;; *) bad "$g/message: not a 96-byte string ('$message')" ;; esac
done

if [ $problems -gt 0 ]; then exit 1; fi
echo "check_layout_h5dump: $file: OK ($(printf "%s\n" "$families" | wc -l) families, $nranks ranks)"
exit 0

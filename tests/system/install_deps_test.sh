#!/bin/sh
# install_deps_test.sh - the main command's installer needs no network where the tools are there:
# `jobs/install-deps.sh main` on a PATH that has every tool of the main job calls apt-get not at
# all and exits 0; with autoconf missing and the registry unreachable (an apt-get whose update
# fails) it exits 1 naming autoconf; its apt-get calls wait for the dpkg lock; an unknown level
# exits 2. apt-get here is a stand-in that logs its arguments; the tools are the real ones.
# Environment (set by `make check`): top_srcdir.
set -u
: "${top_srcdir:?}"
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
rc=0
. "$top_srcdir/tests/system/test_lib.sh" # fail()
mkdir "$tmp/bin" "$tmp/noconf"
for t in cc make autoconf automake pkg-config mpicc mpirun python3 h5pcc h5cc dpkg-query sed grep sort dirname id printf cat; do
  p=$(command -v "$t" 2>/dev/null) || continue
  ln -s "$p" "$tmp/bin/$t"
  [ "$t" = autoconf ] || ln -s "$p" "$tmp/noconf/$t"
done
[ -e "$tmp/bin/autoconf" ] && [ -e "$tmp/bin/mpicc" ] || { echo "SKIP: the main job's tools are not installed here"; exit 77; }
cat >"$tmp/apt-get" <<EOF
#!/bin/sh
echo "apt-get \$*" >>"$tmp/apt.log"
case " \$* " in *" update "*) exit 100 ;; esac
exit 0
EOF
chmod +x "$tmp/apt-get"
ln -s "$tmp/apt-get" "$tmp/bin/apt-get"
ln -s "$tmp/apt-get" "$tmp/noconf/apt-get"
bash=$(command -v bash)

PATH="$tmp/bin" "$bash" "$top_srcdir/jobs/install-deps.sh" main >"$tmp/ok.log" 2>&1
got=$?
[ "$got" -eq 0 ] || { fail "every tool present: exit $got"; cat "$tmp/ok.log"; }
[ ! -s "$tmp/apt.log" ] || fail "every tool present: apt-get was called: $(cat "$tmp/apt.log")"
[ $rc -ne 0 ] || echo "ok every tool present: exit 0, no apt-get ($(tail -n 1 "$tmp/ok.log"))"

PATH="$tmp/noconf" "$bash" "$top_srcdir/jobs/install-deps.sh" main >"$tmp/miss.log" 2>&1
got=$?
[ "$got" -eq 1 ] || fail "autoconf missing, no registry: exit $got, expected 1"
grep -q "missing for the main job: autoconf.*cannot be reached" "$tmp/miss.log" ||
  fail "autoconf missing, no registry: the message does not name it: $(cat "$tmp/miss.log")"
grep -q "DPkg::Lock::Timeout=" "$tmp/apt.log" || fail "apt-get does not wait for the dpkg lock: $(cat "$tmp/apt.log")"
grep -q "slurm\|munge\|clang" "$tmp/apt.log" && fail "the main level asked for test packages: $(cat "$tmp/apt.log")"
[ $rc -ne 0 ] || echo "ok autoconf missing, registry unreachable: exit 1, '$(grep missing "$tmp/miss.log")'"

"$bash" "$top_srcdir/jobs/install-deps.sh" nonsense >"$tmp/bad.log" 2>&1
got=$?
[ "$got" -eq 2 ] || fail "an unknown level: exit $got, expected 2"
exit $rc

# copy_tree.sh - sourced by run_mutants.sh and run_analysis_mutants.sh: copy_tree SRC DEST copies
# the source tree SRC into the directory DEST (git's files, tracked and untracked-not-ignored, in
# a git work tree; else all of SRC) and makes the copy writable (a read-only tree, as make
# distcheck's, gives a read-only copy). Returns nonzero when the copy fails.
copy_tree() {
  local src=$1 dest=$2
  if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$src" && git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
       [ -e "$f" ] && printf '%s\0' "$f"; done | tar --null -T - -cf - | tar -C "$dest" -xf -) || return 1
  else
    cp -a "$src/." "$dest/" || return 1
  fi
  chmod -R u+w "$dest"
}

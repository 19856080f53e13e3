# A bash context of Warren's code interpreter, started by driver.py as
# `bash --norc --noprofile bash-context.sh DIR`. For each line on stdin the
# driver has written the run's code to DIR/cell.sh; it is sourced in this
# shell (so variables, functions and the working directory persist), its
# output goes to DIR/out and DIR/err, and a JSON line with its exit status
# tells the driver it is done. SIGINT (an interrupt) returns from the code.
__warren_dir=$1
trap '' INT
while IFS= read -r __warren_line; do
  trap 'return 130 2>/dev/null' INT
  . "$__warren_dir/cell.sh" > "$__warren_dir/out" 2> "$__warren_dir/err" < /dev/null
  __warren_rc=$?
  trap '' INT
  printf '{"type":"done","rc":%d}\n' "$__warren_rc"
done

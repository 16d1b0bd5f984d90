# bench/identical-check.sh — sourced by the byte-identity scripts
# (lean-identical.sh, lean-identical-big.sh): `check NAME ARGS...` runs
# `$old ARGS` and `$new ARGS` (@INST@ in ARGS becomes an --instances file of
# each) into $tmp and compares stdout, stderr and the instances files; it
# counts the cases in n, sets rc=1 and prints "DIFFERENT (what): NAME" on a
# difference, and with VERBOSE=1 prints every case with its stdout's md5.
check() { # check NAME ARGS...
	local name=$1 s=identical
	shift
	for v in old new; do
		local bin=$old
		[[ $v == new ]] && bin=$new
		"$bin" "${@//@INST@/$tmp/$name.$v.inst}" >"$tmp/$name.$v.out" 2>"$tmp/$name.$v.err" || echo "rc $? ($v): $name" >>"$tmp/$name.$v.err"
	done
	for x in out err inst; do
		[[ -f $tmp/$name.old.$x ]] || continue
		if ! cmp -s "$tmp/$name.old.$x" "$tmp/$name.new.$x"; then
			echo "DIFFERENT ($x): $name"
			s=different rc=1
		fi
	done
	n=$((n + 1))
	[[ ${VERBOSE:-} != 1 ]] || echo "$name: $s ($(md5sum <"$tmp/$name.new.out" | cut -c1-8))"
}

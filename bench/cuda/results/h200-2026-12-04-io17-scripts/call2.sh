#!/usr/bin/env bash
# io17 (issue #14), device call 2 (warm machine right after call 1, on call 1's build in /tmp/io17): call 1 left the
# suite 17 s (its build took 191 s), so the "CUDA backward*" cases again, alone, errors printed.
set -u
(LINEA_BACKWARD_ERRORS=1 timeout 70 /tmp/io17/tests '-tc=CUDA backward*' > $OUT/tests.log 2>&1; echo "tests rc $?" >> $OUT/tests.log)
grep -E "ERROR|FAILED|test cases|assertions|rc " $OUT/tests.log | head -30

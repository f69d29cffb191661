#!/usr/bin/env bash
# ccq9's device call: binaries built on the shared machine (nvcc 13.0, sm_90a; build.sh), carried in .gpu/ccq9.
# Checks side by side, then the timings alone on the GPU, then ncu on the two CCQ chunk kernels.
D=.gpu/ccq9
export PATH=$PATH:/usr/local/cuda/bin
chmod +x $D/ccq_ab $D/ccq_suite
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/gpu.txt 2>&1
t0=$(date +%s)
( timeout 45 $D/ccq_ab check > $OUT/check.jsonl 2>&1; echo "rc=$?" >> $OUT/check.jsonl ) &
( timeout 45 $D/ccq_suite -tc='*CCQ*' > $OUT/suite.txt 2>&1; echo "rc=$?" >> $OUT/suite.txt ) &
( timeout 45 compute-sanitizer --tool memcheck $D/ccq_ab small > $OUT/sanitize.txt 2>&1; echo "memcheck rc=$?" >> $OUT/sanitize.txt
  timeout 30 compute-sanitizer --tool racecheck $D/ccq_ab small >> $OUT/sanitize.txt 2>&1; echo "racecheck rc=$?" >> $OUT/sanitize.txt ) &
wait
echo "checks: $(( $(date +%s) - t0 )) s"
timeout 30 $D/ccq_ab time > $OUT/time.jsonl 2>&1; echo "rc=$?" >> $OUT/time.jsonl
echo "time: $(( $(date +%s) - t0 )) s"
timeout 25 ncu --clock-control none --kernel-name regex:ccq_chunk_kernel --print-kernel-base mangled --csv \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum \
  $D/ccq_ab once > $OUT/ncu.csv 2> $OUT/ncu.err; echo "ncu rc=$?" >> $OUT/ncu.err
echo "all: $(( $(date +%s) - t0 )) s"
tail -2 $OUT/check.jsonl; grep -E "test cases|assertions|rc=" $OUT/suite.txt; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|rc=" $OUT/sanitize.txt; cat $OUT/time.jsonl
grep -c gpu__time_duration $OUT/ncu.csv; tail -3 $OUT/ncu.err

#!/usr/bin/env bash
# Copies this worktree to /work/main/.gpu/kone16 (DEVICE.md) with the objects of build_old.sh / build_new.sh gzipped
# under objs/ (this branch's units and main's unchanged ones) and objs/old/ (main's backward_phases unit).
set -eu
N=kone16; D=/work/main/.gpu/$N
rm -rf $D && mkdir -p $D/objs/old
git -C /work/wt/$N ls-files -co --exclude-standard | tar -C /work/wt/$N -cf - -T - | tar -C $D -xf -
for u in backward_phases_per_key additive simple_gla gla kda gdn2; do gzip -c /tmp/kone16/obj_old/$u.inst.o > $D/objs/$u.inst.o.gz; done
for u in main; do gzip -c /tmp/kone16/obj_old/$u.o > $D/objs/$u.o.gz; done
gzip -c /tmp/kone16/obj_old/backward_phases.inst.o > $D/objs/old/backward_phases.inst.o.gz
for u in backward_phases delta gated_delta; do gzip -c /tmp/kone16/obj_new/$u.inst.o > $D/objs/$u.inst.o.gz; done
for u in backward_test kone16_ab cuda_fuzz; do gzip -c /tmp/kone16/obj_new/$u.o > $D/objs/$u.o.gz; done
du -sh $D $D/objs

#!/bin/bash
cd /tmp/pk13
./ab.sh kda
./ab.sh gdn2
SUF=_wide ./ab.sh kda -DLINEA_BWD_DIAG_SPAN=-1
SUF=_wide ./ab.sh gla -DLINEA_BWD_DIAG_SPAN=-1
SUF=_f32 ./ab.sh kda -DGRAD_AB_FLOAT
./build_units.sh

#!/bin/sh
# Issue 33 item 2: the time-to-accuracy panel at 120,000, 480,000 and
# 1,200,000 rows, for a quiet machine (2 threads, one run at a time).
#
#   sh benchmarks/panel_more_rows.sh OUT.json F120K F480K F1200K [STEP ...]
#
# F120K, F480K, F1200K: make_big_file.py fashion-mnist.scale FILE --rows N
# (the first rows of each are Fashion-MNIST itself). STEP: growth, 480k,
# 1200k, 1200k-nystroem, dsg-stream, dsg-480k, dsg-1200k, sbp (default:
# growth 480k 1200k; each of the others is a list of its own).
# Every run appends its JSON row to OUT.json; then
#
#   python examples/more_rows.py examples/more_rows.json OUT.json
#
# draws the figure with every row measured before (examples/more_rows.json).
# What each step gives: benchmarks/README.md, "More rows".
set -e
[ $# -ge 4 ] || { echo "usage: $0 OUT.json F120K F480K F1200K [STEP ...]" >&2; exit 2; }
OUT=$1 F120K=$2 F480K=$3 F1200K=$4
shift 4
STEPS=${*:-growth 480k 1200k}
BENCH="python benchmarks/bench_scale.py --datasets fashion --threads 2 --json $OUT --timeout 3600"
EIGENPRO="--subsample 3000 --lambda 1e-7 --precision half"
DSG="--precision single -m 3000"
SBP="-m 3000"
SBP_EPOCHS=0.5

run() { echo "+ $*"; "$@"; }

for step in $STEPS; do
    case $step in
    growth)     # SMO on the sparse rows as read: 120k whole, the first 60k and
                # 180k of the 1.2M file (about 20 minutes); ThunderSVM on the
                # first 15k/30k/60k rows (the originals; ten times SMO's time)
        run $BENCH --train-file "$F120K" --methods smo
        for rows in 60000 180000; do
            run $BENCH --train-file "$F1200K" --train-rows $rows --methods smo
        done
        for rows in 15000 30000 60000; do
            run $BENCH --train-file "$F120K" --train-rows $rows --methods thundersvm
        done ;;
    480k)       # the peers in chunks (480k x 4000 x 8 bytes = 15 GB: chunked)
        run $BENCH --dense --train-file "$F480K" --methods rbf-sgd \
            --budgets rbf-sgd=4000 --sgd-epochs 3
        run $BENCH --dense --train-file "$F480K" --methods nystroem-sgd \
            --budgets nystroem-sgd=4000 --sgd-epochs 1 ;;
    1200k)      # sparse rows (dense would be 7.5 GB): EigenPro out of core, UDSG streamed
        run $BENCH --train-file "$F1200K" --methods eigenpro --budgets eigenpro=15000 \
            --options eigenpro="$EIGENPRO --epochs 7 -m 3000"
        run $BENCH --train-file "$F1200K" --methods udsg --budgets udsg=1 \
            --options udsg="--stream --precision single -m 3000"
        run $BENCH --dense --train-file "$F1200K" --methods rbf-sgd \
            --budgets rbf-sgd=4000 --sgd-epochs 2 ;;
    1200k-nystroem)
        run $BENCH --dense --train-file "$F1200K" --methods nystroem-sgd \
            --budgets nystroem-sgd=4000 --sgd-epochs 1 ;;
    dsg-stream) # one pass read from the file (reading in the training time):
                # DSG, UDSG, CDSG at 480k; DSG, CDSG at 1.2M (UDSG: step 1200k)
        run $BENCH --train-file "$F480K" --methods dsg,udsg,cdsg \
            --budgets dsg=1 --budgets udsg=1 --budgets cdsg=1 \
            --options dsg="$DSG --stream" --options udsg="$DSG --stream" \
            --options cdsg="$DSG --stream"
        run $BENCH --train-file "$F1200K" --methods dsg,cdsg --budgets dsg=1 --budgets cdsg=1 \
            --options dsg="$DSG --stream" --options cdsg="$DSG --stream" ;;
    dsg-480k)   # in memory, dense, 6 epochs: beside UDSG's 480k row (its
                # features grow with the iterations: 16 times the 120k run's time)
        run $BENCH --dense --train-file "$F480K" --methods cdsg,dsg \
            --budgets dsg=6 --budgets cdsg=6 --options dsg="$DSG" --options cdsg="$DSG" ;;
    dsg-1200k)  # in memory, sparse rows (5.4 GB as CSR), one pass, reading outside
                # the time: one permutation of all the rows, where --stream visits
                # the file's windows in order (its copies one after the other)
        run $BENCH --train-file "$F1200K" --methods dsg,udsg,cdsg \
            --budgets dsg=1 --budgets udsg=1 --budgets cdsg=1 \
            --options dsg="$DSG" --options udsg="$DSG" --options cdsg="$DSG" ;;
    sbp)        # SBP one-vs-one (45 pairs), the C -> nu rule, 0.5 epochs: the 60k
                # originals and the 120k file (4 times the work: doc/sbp.md, "Many
                # classes, many rows"; 2 epochs would be 4 times more again)
        run $BENCH --train-file "$F120K" --train-rows 60000 --methods sbp \
            --budgets sbp=$SBP_EPOCHS --options sbp="$SBP"
        run $BENCH --train-file "$F120K" --methods sbp \
            --budgets sbp=$SBP_EPOCHS --options sbp="$SBP" ;;
    *) echo "$0: unknown step $step (growth, 480k, 1200k, 1200k-nystroem, dsg-stream," \
            "dsg-480k, dsg-1200k, sbp)" >&2; exit 2 ;;
    esac
done

# shellcheck shell=sh
# btl_iwarpx_lib.sh: shared pieces of the tests that run MPI programs over the project's BTL
# (ompi_btl_iwarpx). Source it from sh or bash.
#
# Contract
#   iwx_mpi_setup MPIRUN OMPI_DIR MCA_DIR FI_DIR FILE...
#       unsets every OMPI_MCA_* variable (a stray one must not change the run), exports
#       FI_PROVIDER_PATH=FI_DIR, sets IWX_MPIRUN / IWX_COMPONENT_PATH ("OMPI_DIR:MCA_DIR"), and
#       fails (status 1, "FAIL: ... not built") unless MCA_DIR/mca_btl_iwarpx.so,
#       FI_DIR/libiwarpx-fi.so and every FILE exist. Warns when an installed
#       mca_btl_iwarpx.so in OMPI_DIR could shadow the build tree's.
#   iwx_mpirun LOG SECONDS NP ARGS...
#       runs, under `timeout -k 10 SECONDS`, as root-capable:
#         mpirun --allow-run-as-root --oversubscribe --bind-to none -np NP
#                --mca mca_base_component_path $IWX_COMPONENT_PATH
#                --mca pml ob1 --mca btl "${IWX_BTL:-self,iwarpx}" --mca btl_iwarpx_verbose 1
#                --mca mpi_yield_when_idle 1 --mca oob_tcp_if_include lo -x FI_PROVIDER_PATH ARGS...
#       with stdout+stderr to LOG; returns mpirun's status (124/137 on timeout). ARGS must not
#       repeat one of these parameters (mpirun refuses a parameter given twice): IWX_BTL
#       overrides "self,iwarpx", IWX_OOB_IF overrides "lo", IWX_MPIRUN_PREFIX (a word list)
#       is put in front of the command (e.g. "ip netns exec NS unshare --uts ...").
#   iwx_check_btl LOG NP REQS
#       proves the BTL carried the traffic: NP "module ready on the iwarpx RDM endpoint" lines,
#       NP finalize counter lines ("finalize: sent S messages (B bytes), received R (B bytes),
#       P puts, G gets, A atomics[, N registrations (M fi_mr_reg), I sendi]") in which every
#       rank sent and received. REQS is a comma list of further requirements over all ranks:
#       "rdma" puts + gets > 0, "putget" puts > 0 and gets > 0, "osc" puts, gets and atomics
#       each > 0, "sendi" sendi > 0 (the line must carry the sendi count), "none" nothing more.
#       Prints "ok: ..." or "FAIL: ..." lines; returns 0 or 1.
#   iwx_check_sctp LOG NP
#       proves point-to-point went over SCTP (btl_iwarpx_p2p=sctp; the run must have
#       FI_LOG_LEVEL=info FI_LOG_SUBSYS=ep_ctrl): NP "module ready ... (point-to-point over SCTP
#       associations" lines; NP "finalize: sctp point-to-point: A associations, S of the T
#       messages sent and R of the U received over SCTP" lines with, on every rank, S = T > 0,
#       R = U > 0 and A > 0; the provider's "connecting to ... over sctp" lines (one per
#       association, on its initiator) number half the sum of A, and none says "over tcp".
#       Prints "ok: ..." or "FAIL: ..." lines; returns 0 or 1.
#   iwx_check_sctp_streams LOG NP
#       proves messages went on SCTP streams other than 0 (btl_iwarpx_sctp_streams > 1): NP
#       "finalize: sctp streams: M of the S messages over SCTP on streams 1..K" lines, K >= 1,
#       M <= S on every rank and M > 0 summed over the ranks. Prints "ok: ..." or "FAIL: ...";
#       returns 0 or 1.
#   iwx_count LOG ERE
#       prints how many times the extended regex ERE matches in LOG. mpirun forwards the ranks'
#       output in pieces, so two ranks' lines can end up on one line of the log: count and
#       search matches, never whole or anchored lines.
#   iwx_matches LOG ERE
#       prints every match of ERE in LOG, one per line (same reason).

iwx_mpi_setup() {
  IWX_MPIRUN=$1
  IWX_COMPONENT_PATH="$2:$3"
  export FI_PROVIDER_PATH="$4"
  _iwx_ompi_dir=$2
  _iwx_mca_dir=$3
  shift 4
  for _v in $(env | sed -n 's/^\(OMPI_MCA_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$_v"; done
  for _f in "$_iwx_mca_dir/mca_btl_iwarpx.so" "$FI_PROVIDER_PATH/libiwarpx-fi.so" "$@"; do
    [ -f "$_f" ] || { echo "FAIL: $_f not built"; return 1; }
  done
  if [ -e "$_iwx_ompi_dir/mca_btl_iwarpx.so" ]; then
    echo "WARNING: $_iwx_ompi_dir/mca_btl_iwarpx.so is installed and may shadow the build tree's copy"
  fi
  return 0
}

iwx_mpirun() {
  _log=$1
  _secs=$2
  _np=$3
  shift 3
  _rc=0
  # shellcheck disable=SC2086  # IWX_MPIRUN_PREFIX is a word list on purpose
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    timeout -k 10 "$_secs" ${IWX_MPIRUN_PREFIX:-} "$IWX_MPIRUN" --allow-run-as-root \
    --oversubscribe --bind-to none -np "$_np" \
    --mca mca_base_component_path "$IWX_COMPONENT_PATH" \
    --mca pml ob1 --mca btl "${IWX_BTL:-self,iwarpx}" --mca btl_iwarpx_verbose 1 \
    --mca mpi_yield_when_idle 1 --mca oob_tcp_if_include "${IWX_OOB_IF:-lo}" \
    -x FI_PROVIDER_PATH "$@" >"$_log" 2>&1 || _rc=$?
  return $_rc
}

iwx_check_btl() {
  _log=$1
  _np=$2
  _reqs=$3
  _fail=0
  _n=$(iwx_count "$_log" "btl:iwarpx: module ready on the iwarpx RDM endpoint")
  [ "$_n" -eq "$_np" ] || { echo "FAIL: $_n 'module ready' lines, expected $_np"; _fail=1; }
  # One "S R P G A I" line per rank; I (sendi) is -1 when the line has no sendi count.
  _stats=$(iwx_matches "$_log" 'btl:iwarpx: finalize: sent [0-9]+ messages \([0-9]+ bytes\), received [0-9]+ \([0-9]+ bytes\), [0-9]+ puts, [0-9]+ gets, [0-9]+ atomics(, [0-9]+ registrations \([0-9]+ fi_mr_reg\), [0-9]+ sendi)?' |
    sed -e 's/.*sent \([0-9]*\) messages ([0-9]* bytes), received \([0-9]*\) ([0-9]* bytes), \([0-9]*\) puts, \([0-9]*\) gets, \([0-9]*\) atomics/\1 \2 \3 \4 \5/' \
      -e 's/^\([0-9 ]*\), [0-9]* registrations ([0-9]* fi_mr_reg), \([0-9]*\) sendi$/\1 \2/' \
      -e 's/^[0-9]* [0-9]* [0-9]* [0-9]* [0-9]*$/& -1/')
  _n=$(printf '%s\n' "$_stats" | grep -c . || true)
  [ "$_n" -eq "$_np" ] || { echo "FAIL: $_n finalize counter lines, expected $_np"; _fail=1; }
  printf '%s\n' "$_stats" | awk -v reqs=",$_reqs," '
    NF == 6 {
      n++; if ($1 == 0 || $2 == 0) idle++
      sent += $1; puts += $3; gets += $4; amos += $5
      if ($6 < 0) nosendi++; else sendi += $6
    }
    END {
      if (n == 0) { print "FAIL: no finalize counters from btl iwarpx"; exit 1 }
      if (idle > 0) { print "FAIL: " idle " rank(s) sent or received nothing over btl iwarpx"; exit 1 }
      bad = 0
      if (index(reqs, ",rdma,") && puts + gets == 0) { print "FAIL: no puts or gets over btl iwarpx"; bad = 1 }
      if (index(reqs, ",putget,") && (puts == 0 || gets == 0)) {
        print "FAIL: puts " puts ", gets " gets " over btl iwarpx (both must be > 0)"; bad = 1
      }
      if (index(reqs, ",osc,") && (puts == 0 || gets == 0 || amos == 0)) {
        print "FAIL: no puts, gets or atomics over btl iwarpx (puts " puts ", gets " gets ", atomics " amos ")"
        bad = 1
      }
      if (index(reqs, ",sendi,") && (nosendi > 0 || sendi == 0)) {
        print "FAIL: no message went through sendi (sendi " sendi ", lines without a count " nosendi + 0 ")"
        bad = 1
      }
      if (bad) exit 1
      print "ok: every rank sent and received over btl iwarpx: " sent " messages, " puts " puts, " gets " gets, " amos " atomics, " sendi " sendi"
    }' || _fail=1
  return $_fail
}

iwx_check_sctp() {
  _log=$1
  _np=$2
  _fail=0
  _n=$(iwx_count "$_log" "btl:iwarpx: module ready on the iwarpx RDM endpoint \(point-to-point over SCTP associations")
  [ "$_n" -eq "$_np" ] || { echo "FAIL: $_n modules with p2p over SCTP, expected $_np"; _fail=1; }
  _stats=$(iwx_matches "$_log" 'finalize: sctp point-to-point: [0-9]+ associations, [0-9]+ of the [0-9]+ messages sent and [0-9]+ of the [0-9]+ received over SCTP' |
    sed 's/.*: \([0-9]*\) associations, \([0-9]*\) of the \([0-9]*\) messages sent and \([0-9]*\) of the \([0-9]*\) received.*/\1 \2 \3 \4 \5/')
  _n=$(printf '%s\n' "$_stats" | grep -c . || true)
  [ "$_n" -eq "$_np" ] || { echo "FAIL: $_n SCTP counter lines, expected $_np"; _fail=1; }
  _connects=$(iwx_count "$_log" 'ep_ctrl:Connect\(\):[0-9]+<info> ep 0x[0-9a-f]+ connecting to [0-9.:]+ over sctp')
  _tcp=$(iwx_count "$_log" 'connecting to [0-9.:]+ over tcp')
  [ "$_tcp" -eq 0 ] || { echo "FAIL: $_tcp provider connections over tcp"; _fail=1; }
  printf '%s\n' "$_stats" | awk -v connects="$_connects" '
    NF == 5 {
      n++; assoc += $1
      if ($1 == 0 || $2 == 0 || $2 != $3 || $4 == 0 || $4 != $5) {
        print "FAIL: a rank sent " $2 " of " $3 " and received " $4 " of " $5 " messages over SCTP on " $1 " associations"
        bad = 1
      }
      sent += $2
    }
    END {
      if (n == 0) { print "FAIL: no SCTP counters"; exit 1 }
      if (assoc != 2 * connects) {
        print "FAIL: the ranks count " assoc " association ends, the provider connected " connects " times over sctp"
        bad = 1
      }
      if (bad) exit 1
      print "ok: every message over SCTP: " sent " sent on " assoc / 2 " associations (" connects " provider connects over sctp)"
    }' || _fail=1
  return $_fail
}

iwx_check_sctp_streams() {
  _log=$1
  _np=$2
  _stats=$(iwx_matches "$_log" 'finalize: sctp streams: [0-9]+ of the [0-9]+ messages over SCTP on streams 1\.\.[0-9]+' |
    sed 's/.*: \([0-9]*\) of the \([0-9]*\) messages over SCTP on streams 1\.\.\([0-9]*\).*/\1 \2 \3/')
  printf '%s\n' "$_stats" | awk -v np="$_np" '
    NF == 3 {
      n++; on += $1; all += $2
      if ($1 > $2) { print "FAIL: a rank counts " $1 " of " $2 " messages on streams 1.." $3; bad = 1 }
      if ($3 < 1) { print "FAIL: a rank uses no stream but 0 (streams 1.." $3 ")"; bad = 1 }
    }
    END {
      if (n != np) { print "FAIL: " n " SCTP stream counter lines, expected " np; exit 1 }
      if (on == 0) { print "FAIL: no message on an SCTP stream other than 0 (of " all ")"; exit 1 }
      if (bad) exit 1
      print "ok: " on " of " all " SCTP messages on streams other than 0"
    }'
}

iwx_count() {
  grep -oE -- "$2" "$1" | wc -l
}

iwx_matches() {
  grep -oE -- "$2" "$1" || true
}

// The guest's /init: a busybox shell script (data, kept in one place). It loads the modules the guest needs, mounts
// the host's root (9p, read-only) under a writable overlay, configures eth0 from the kernel command line, and then
// serves the control channel (a virtio-serial port named kpts.ctl) with a line protocol:
//
//   host → guest   RUN <id> <command, base64> [<stdin, base64>]   run `sh -c COMMAND` chrooted into the host's root
//                  SPAWN <id> <command, base64> [<stdin, base64>] the same, its output streamed as it comes
//                  SPAWN <id> <command, base64> -                 the same, its stdin kept open for IN and EOF
//                  IN <id> <bytes, base64>                       more bytes for that SPAWN's open stdin
//                  EOF <id>                                      close that SPAWN's open stdin (after its bytes)
//                  SIGNAL <id> <NAME>                            send signal NAME to that command's process group
//                  KILL <id>                                     kill that command's process group
//                  POWEROFF                                      power off (also on end of file: the host is gone)
//   guest → host   READY <uname -r>                              once, when commands can run
//                  DONE <id> <status> <stdout bytes> <stderr bytes>, then stdout's and stderr's bytes as they are
//                  STARTED <id> <pid>                            a SPAWN's process runs, as pid in the guest
//                  OUT <id> <1|2> <bytes>, then that many bytes   a SPAWN's stdout (1) or stderr (2), as read
//                  EXIT <id> <status>                            a SPAWN's process ended, after its last OUT
//
// Each command runs in the background, so several may run at once; one writer sends the answers whole, one after
// another, so the bytes of one answer are never interleaved with another's (busybox has no flock). A SPAWN's
// stdout and stderr are fifos, each read by a pump that blocks in `dd` until bytes come (no polling), sends what
// one read returned, and ends at end of file; EXIT follows once the process has exited and both pumps ended (a
// child that keeps the output open delays it: SIGNAL and KILL go to the whole process group). An open stdin is a
// third fifo, written by a feeder of its own (`feed`): the control loop only leaves each IN's bytes in a file and
// wakes the feeder, so a process that never reads its stdin blocks its feeder, never the loop; the feeder ends
// after EOF, when the process's stdin has no reader left (it exited), or when the process has ended.

/** The virtio-serial port's name (QEMU `virtserialport,name=…`). */
export const CONTROL_PORT_NAME = 'kpts.ctl';

/** Where the guest mounts the host's writable scratch directory (when the guest was given one). */
export const GUEST_SCRATCH_DIR = '/kpts/scratch';

/** The 9p options of a share (`-o`): read-write, and no cache in the guest, so the host's writes show at once. */
export const SHARE_MOUNT_OPTIONS = 'trans=virtio,version=9p2000.L,msize=524288,cache=none';

/** The mount tag (and QEMU fsdev id) of the guest's `index`th share. */
export const shareTag = (index: number): string => `${SHARE_TAG_PREFIX}${index}`;
const SHARE_TAG_PREFIX = 'share';

/**
 * The shell functions that run what the control channel asks for (a RUN, a SPAWN with its output pumps and its
 * stdin's feeder), each started in the background by the control loop; `$R` is the root commands run in.
 */
const COMMAND_FUNCTIONS = `run_one() {
  d=/run/kpts/$1
  echo "$2" | base64 -d >$d.cmd
  : >$d.in
  [ -n "$3" ] && echo "$3" | base64 -d >$d.in
  setsid chroot $R /bin/sh -c "$(cat $d.cmd)" <$d.in >$d.out 2>$d.err 3>&- &
  echo $! >$d.pid
  wait $!
  st=$?
  {
    echo "DONE $1 $st $(stat -c %s $d.out) $(stat -c %s $d.err)"
    cat $d.out $d.err
  } >$d.answer
  rm -f $d.cmd $d.in $d.out $d.err $d.pid
  echo $d.answer >/run/kpts/answers
}

# One message for the writer: its text into a file, the file's name into the fifo.
send() { echo "$2" >"$1"; echo "$1" >/run/kpts/answers; }

# signal_group ID SIGNAL: to the process group of command ID, while it runs (nothing once its pid file is gone, or
# before it is written). busybox's kill takes no "--": a negative number after the signal is a process group.
signal_group() {
  sg=$(cat /run/kpts/$1.pid 2>/dev/null)
  [ -n "$sg" ] && kill -"$2" -"$sg"
}

# pump ID STREAM, stdin a fifo: each read (up to 64 KiB, whatever one read returns) goes out as one OUT message.
pump() {
  n=0
  while :; do
    f=/run/kpts/$1.$2.$n
    dd bs=65536 count=1 of=$f.b 2>/dev/null
    s=$(stat -c %s $f.b)
    [ "$s" -gt 0 ] || { rm -f $f.b; return; }
    { echo "OUT $1 $2 $s"; cat $f.b; } >$f
    rm -f $f.b
    echo $f >/run/kpts/answers
    n=$((n + 1))
  done
}

# wake D: after adding to an open stdin's directory, wakes its feeder if it waits (see feed). Only whoever removes
# D/idle rings, so the bell holds one line at most and writing it (opened read-write: no wait for a reader) never
# blocks; it fails quietly once the feeder has gone.
wake() { rmdir $1/idle 2>/dev/null && echo 2>/dev/null 1<>$1/bell; }

# feed D, stdout the write end of the process's stdin: writes the chunks the control loop leaves in D (files 0, 1,
# …, each written aside and renamed, so whole) in order, and ends after D/eof (made after the last chunk, so it is
# looked for first), when a write finds no reader left (the process exited: its chunks are dropped), or at D/stop
# (spawn_one: the process has ended). It makes D/idle before it looks, and sleeps on the bell only if nothing is
# there: whoever adds something after that look removes D/idle and rings, so no wake-up is lost. When it finds a
# chunk and cannot remove D/idle itself, someone has rung: it takes that line, so a ring always matches one look.
feed() {
  exec 8<>$1/bell
  n=0
  while mkdir $1/idle; do
    [ -e $1/stop ] && break
    e=
    [ -e $1/eof ] && e=1
    if [ -e $1/$n ]; then
      rmdir $1/idle 2>/dev/null || read -r _ <&8
      cat $1/$n 2>/dev/null || break
      rm -f $1/$n
      n=$((n + 1))
    elif [ -n "$e" ]; then
      break
    else
      read -r _ <&8
    fi
  done
  exec 8<&- >&-
  # Renamed first: from then on the control loop finds no directory to add a chunk to.
  mv $1 $1.gone && rm -rf $1.gone
}

spawn_one() {
  d=/run/kpts/$1
  echo "$2" | base64 -d >$d.cmd
  mkfifo $d.o1 $d.o2
  pump $1 1 <$d.o1 &
  p1=$!
  pump $1 2 <$d.o2 &
  p2=$!
  # The write ends are opened here, before the fork, and handed down: a process that dies before its own
  # redirections would have run still held them, so the pumps see end of file, rather than wait in open() for a
  # writer that never comes. It gets no control port (fd 3) either.
  exec 5>$d.o1 6>$d.o2
  # stdin: an open one is a fifo whose one writer is the feeder; its open and this read end's wait for each other.
  # The feeder holds no read end (or a write to a process that exited would block rather than fail) and no output
  # end (or the pumps would wait for it): closed with exec in a subshell, since ash keeps a copy (fd 10 and up) of
  # what a redirection on a function call replaces, to restore it after. Otherwise a file of the given bytes.
  if [ "$3" = - ]; then
    mkfifo $d.stdin/fifo
    (
      exec 5>&- 6>&- >$d.stdin/fifo
      feed $d.stdin
    ) &
    exec 7<$d.stdin/fifo
  else
    : >$d.in
    [ -n "$3" ] && echo "$3" | base64 -d >$d.in
    exec 7<$d.in
  fi
  mkfifo $d.go
  setsid /bin/sh -c ': >"$1"; exec chroot "$2" /bin/sh -c "$3"' spawn $d.go $R "$(cat $d.cmd)" \\
    <&7 >&5 2>&6 3>&- 5>&- 6>&- 7<&- &
  pid=$!
  exec 5>&- 6>&- 7<&-
  # STARTED only once it leads its own process group (it opens .go after setsid): a SIGNAL or KILL, sent to the
  # group, must find the group there. Waited for in cat, not in this shell's own open(): a child of this shell
  # that ends meanwhile (a feeder after an early EOF) interrupts that open (SIGCHLD, EINTR), and a redirection that
  # fails ends the shell, which left the process without STARTED and EXIT.
  cat $d.go
  rm -f $d.go
  echo $pid >$d.pid
  send $d.started "STARTED $1 $pid"
  wait $pid
  st=$?
  rm -f $d.pid
  wait $p1 $p2
  # Its feeder, if still there, stops (a child that kept the stdin without reading it would hold it in a write).
  [ "$3" = - ] && touch $d.stdin/stop 2>/dev/null && wake $d.stdin
  rm -f $d.cmd $d.in $d.o1 $d.o2
  send $d.exit "EXIT $1 $st"
}
`;

/**
 * The init script; `bootModules` are modprobed in order before anything is mounted (virtio, 9p, overlay, and what
 * the kernel tests need at once); every other module of the initramfs loads on demand through /sbin/modprobe.
 */
export function initScript(bootModules: readonly string[]): string {
  return `#!/bin/busybox sh
# Generated by packages/lab/src/vm/init-script.ts: the guest's init (pid 1).
/bin/busybox mkdir -p /proc /sys /dev /sbin /usr/bin /usr/sbin /run/kpts /host /rw /newroot
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
say() { echo "kpts-guest: $*" >/dev/console; }
fail() { say "FAILED: $*"; sync; poweroff -f; }
arg() { for w in $(cat /proc/cmdline); do case "$w" in "$1"=*) echo "\${w#*=}"; return;; esac; done; }

for m in ${bootModules.join(' ')}; do modprobe "$m" || say "modprobe $m failed"; done
echo /sbin/modprobe >/proc/sys/kernel/modprobe

# The host's root, read-only, under a tmpfs overlay: the guest runs the host's nft, iptables and node.
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=524288,cache=loose hostroot /host || fail "mount hostroot"
mount -t tmpfs -o mode=0755 rw /rw && mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/host,upperdir=/rw/upper,workdir=/rw/work /newroot || fail "mount overlay"
R=/newroot
for d in proc sys dev run tmp; do mkdir -p $R/$d; done
mount -t proc proc $R/proc
mount -t sysfs sysfs $R/sys
mount -t devtmpfs devtmpfs $R/dev
mkdir -p $R/dev/pts $R/dev/shm && mount -t devpts devpts $R/dev/pts && mount -t tmpfs shm $R/dev/shm
mount -t tmpfs -o mode=0755 run $R/run
# kpts.hosttmp=1: the host's /tmp shows through the overlay (writes stay in the guest), so warm caches (tsx's
# compiled files) carry over; otherwise /tmp starts empty.
[ "$(arg kpts.hosttmp)" = 1 ] || mount -t tmpfs -o mode=1777 tmp $R/tmp
mkdir -p $R/run/netns
rel=$(uname -r)
mkdir -p $R/lib/modules/$rel && mount --bind /lib/modules/$rel $R/lib/modules/$rel
# kpts.shares=B64,B64,…: host directories exported read-write as share0, share1, …, each mounted at the path
# (base64: any path passes the command line as one word) in the guest's root. mkdir and mount run chrooted, so a
# symbolic link on the way resolves inside that root. cache=none: every read and lookup goes to the host, so what
# the host writes there is seen at once (pid files, logs, ready files).
i=0
for s in $(arg kpts.shares | tr , ' '); do
  p=$(echo "$s" | base64 -d)
  chroot $R /bin/busybox mkdir -p "$p" &&
    chroot $R /bin/busybox mount -t 9p -o ${SHARE_MOUNT_OPTIONS} ${SHARE_TAG_PREFIX}$i "$p" ||
    fail "mount share $i at $p"
  i=$((i + 1))
done

ip link set lo up
h=$(arg kpts.hostname); [ -n "$h" ] && hostname "$h"
a=$(arg kpts.ip)
if [ -n "$a" ]; then
  ip link set eth0 up && ip addr add "$a" dev eth0 || fail "address $a on eth0"
  g=$(arg kpts.gw); [ -n "$g" ] && ip route add default via "$g"
fi

# The port appears when the host's side of virtio-serial announces it, shortly after the driver loads.
port=
i=0
while [ -z "$port" ] && [ $i -lt 400 ]; do
  for p in /sys/class/virtio-ports/*; do
    [ "$(cat $p/name 2>/dev/null)" = ${CONTROL_PORT_NAME} ] && port=/dev/\${p##*/}
  done
  [ -n "$port" ] && [ -c "$port" ] || { port=; i=$((i + 1)); sleep 0.05; }
done
[ -n "$port" ] || fail "no virtio-serial port ${CONTROL_PORT_NAME}"

${COMMAND_FUNCTIONS}exec 3<>"$port"
# One writer sends whole answers, one after another; a name written to the fifo is one atomic write.
mkfifo /run/kpts/answers
(
  exec 4<>/run/kpts/answers
  while read -r f <&4; do cat "$f" >&3; rm -f "$f"; done
) &
say "ready"
echo "READY $rel" >&3
while read -r verb id cmd input <&3; do
  case "$verb" in
    RUN) run_one "$id" "$cmd" "$input" & ;;
    SPAWN)
      # An open stdin's directory is made here, before the next message (an IN) is read; its counter names chunks.
      [ "$input" = - ] && mkdir /run/kpts/$id.stdin && echo 0 >/run/kpts/$id.stdin/n &&
        mkfifo /run/kpts/$id.stdin/bell
      spawn_one "$id" "$cmd" "$input" &
      ;;
    IN)
      # Never a wait here: the bytes go to a file (tmpfs), the feeder is woken. No directory (it ended): dropped.
      D=/run/kpts/$id.stdin
      if read -r n 2>/dev/null <$D/n; then
        echo "$cmd" | base64 -d 2>/dev/null >$D/part && mv $D/part $D/$n 2>/dev/null &&
          echo $((n + 1)) 2>/dev/null >$D/n
        wake $D
      fi
      ;;
    EOF) echo 2>/dev/null >/run/kpts/$id.stdin/eof && wake /run/kpts/$id.stdin ;;
    SIGNAL) signal_group "$id" "$cmd" ;;
    KILL) signal_group "$id" KILL ;;
    POWEROFF) break ;;
  esac
done
say "powering off"
sync
poweroff -f
`;
}

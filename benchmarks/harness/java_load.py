"""Producer processes on Kafka's own Java producer (scenario `client.producer_library: java`).

The Java program (`benchmarks/java/LedgerProducer.java`, installed and compiled by
`playbooks/java-client.yml`) keeps the same open-loop schedule, message layout and transactions as
`producer.producer_main`; it writes each outcome as one tab-separated row on its stdout (the row kinds
are listed at the top of its source). This process is its parent: it writes those rows into the
run's ledgers with the same writers the librdkafka producer uses, so the checker cannot tell the
clients apart, and forwards the runner's moves of the end of the load to the program's stdin.
"""

from __future__ import annotations

import resource
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.core.codes import OUTCOMES
from benchmarks.core.connection import Connection, ConnectionSettingsError, java_twin, parse_properties, secret_key
from benchmarks.core.paths import STATE_DIR
from benchmarks.harness import load
from benchmarks.harness import transactions as txns
from benchmarks.hosts.ansible import PlaybookRunner, summarize_failures
from benchmarks.record import ledger, message

VERSION = "4.3.1"  # the kafka-clients release (playbooks/java-client.yml's java_client_version)
PLAYBOOK = "java-client.yml"
MAIN_CLASS = "LedgerProducer"


def client_dir(version: str = VERSION) -> Path:
    return STATE_DIR / "java-client" / version


def classpath(version: str = VERSION) -> str:
    home = client_dir(version)
    return f"{home / 'classes'}:{home / 'lib'}/*"


def describe(version: str = VERSION) -> str:
    """The client as a report names it."""
    return f"Kafka Java producer {version}, KIP-890 client side"


class JavaClientError(RuntimeError):
    """The Java producer could not be installed or compiled (the playbook's failures say why)."""


def installed(version: str = VERSION) -> bool:
    return (client_dir(version) / "classes" / f"{MAIN_CLASS}.class").is_file()


def ensure_installed(runner: PlaybookRunner, inventory_path: Path, force: bool = False) -> None:
    """Install the client's jars and compile the program (playbooks/java-client.yml), unless done."""
    if installed() and not force:
        return
    result = runner.run(PLAYBOOK, inventory_path)
    if not result.ok:
        raise JavaClientError(f"{PLAYBOOK} could not install the Java producer:\n"
                              f"{summarize_failures(result.failures)}")


def connection_properties(conn: Connection) -> dict[str, str]:
    """The Java client's connection settings: none for plaintext; for a secured one, the Java twin
    (`<profile>-java.properties`) the kafka role writes beside each librdkafka settings file."""
    if not conn.secured:
        return {"bootstrap.servers": conn.bootstrap}
    twin = java_twin(Path(conn.source)) if conn.source else None
    if twin is None or not twin.is_file():
        raise ConnectionSettingsError(
            f"client.producer_library java on a {conn.security} connection needs the Java client's settings "
            f"beside {conn.source or 'the connection settings'} ({twin or '<profile>-java.properties'}: not found)")
    props = {k: v for k, v in parse_properties(twin).items() if k != "bootstrap.servers"}
    return {**props, "bootstrap.servers": conn.bootstrap}


def settings(args: load.ProducerArgs) -> dict[str, str]:
    """The program's settings file: bench.* for the schedule, producer.* for the client."""
    out: dict[str, Any] = {
        **message.java_settings(), "bench.tag": message.run_tag(args.run_id).decode("ascii"),
        "bench.index": args.index, "bench.topic": args.topic, "bench.message_size": args.message_size,
        "bench.keys": args.keys, "bench.start_ns": args.start_ns, "bench.end_ns": args.end_ns,
        "bench.interval_ns": int(1e9 / args.rate) if args.rate else 0}
    client = {"acks": "all", **args.config, **connection_properties(args.conn)}
    if args.transactions is not None:
        t = args.transactions
        out |= {"bench.txn.messages": t.messages, "bench.txn.abort_ratio": t.abort_ratio,
                "bench.txn.timeout_ms": t.timeout_ms, "bench.txn.seed": t.seed}
        client |= txns.producer_config(t, args.run_id, args.index)
    out |= {f"producer.{k}": v for k, v in client.items()}
    return {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in out.items()}


def _write_properties(path: Path, values: dict[str, str]) -> None:
    def escape(text: str) -> str:
        return text.replace("\\", "\\\\").replace("\n", "\\n").replace("=", "\\=").replace(":", "\\:")

    path.write_text("".join(f"{escape(k)}={escape(v)}\n" for k, v in sorted(values.items())))
    path.chmod(0o600)  # may hold the client's password


def _null(text: str) -> int | None:
    return None if text == "-" else int(text)


def producer_main(args: load.ProducerArgs, counters: Any, slot: int, end: Any = None) -> None:
    """Run the Java producer for one schedule and write its rows into the ledgers."""
    load.die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if args.rate is None:
        raise ValueError("the Java producer runs on a schedule: workload.rate must be set")
    ledger_dir = Path(args.ledger_dir)
    ledger_dir.mkdir(parents=True, exist_ok=True)
    name = f"producer-{args.index:03d}"  # the librdkafka producer's names, and the program's beside them
    log = ledger_dir / f"{name}.java.log"
    # The program reads its settings, secrets inside, from a private directory removed when it ends;
    # the run directory keeps them with every secret masked.
    private = Path(tempfile.mkdtemp(prefix=f"kafka-bench-{name}-"))
    conf, values = private / "producer.properties", settings(args)
    _write_properties(conf, values)
    _write_properties(ledger_dir / f"{name}.java.properties",
                      {k: "***" if secret_key(k) else v for k, v in values.items()})
    try:
        _produce(args, counters, slot, end, conf, log, name)
    finally:
        shutil.rmtree(private, ignore_errors=True)


def _produce(args: load.ProducerArgs, counters: Any, slot: int, end: Any, conf: Path, log: Path, name: str) -> None:
    """Run the program on its settings file `conf` and write its rows into the ledgers."""
    ledger_dir = Path(args.ledger_dir)
    java = shutil.which("java") or "java"
    stderr = log.open("w")
    cpu_start = time.process_time() + _children_cpu_s()  # the program's CPU is known once it is waited for
    proc = subprocess.Popen([java, "-cp", classpath(), MAIN_CLASS, str(conf)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=stderr, text=True, bufsize=1)
    out = ledger.ProduceLedgerWriter(ledger_dir, name, args.run_id, args.index, enabled=args.ledger_enabled)
    txn_out = ledger.LedgerWriter(ledger_dir.parent / "txn", f"txn-{args.index:03d}", ledger.TXN_SCHEMA,
                                  enabled=args.ledger_enabled and args.transactions is not None)
    forwarding = threading.Event()
    threading.Thread(target=_forward_end, args=(proc, end, args.end_ns, forwarding), daemon=True).start()
    stats, replaced = [0, 0, 0, 0], []
    base = slot * load.COUNTERS
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            fields = line.rstrip("\n").split("\t")
            kind = fields[0]
            if kind == "R":
                seq, key, intended, sent, ack, partition, offset = (_null(f) for f in fields[1:8])
                outcome, error = fields[8], None if fields[9] == "-" else fields[9]
                out.append(args.run_id, args.index, seq, key, intended, sent, ack, outcome, partition, offset, error, None)
                stats[1 + OUTCOMES.index(outcome)] += 1
            elif kind == "T":
                txn, first, messages = (int(f) for f in fields[1:4])
                txn_out.append(args.run_id, args.index, txn, first, messages, fields[4], fields[5], int(fields[6]),
                               int(fields[7]), None if fields[8] == "-" else fields[8])
                txn_out.maybe_flush()
            elif kind == "X":
                replaced.append({"at_ns": int(fields[1]), "seq": int(fields[2]), "error": fields[3]})
            elif kind == "P":
                stats[0] = int(fields[1])
                out.maybe_flush()
                load.publish(counters, base, stats)
    finally:
        forwarding.set()
        code = proc.wait()
        stderr.close()
        out.close()
        txn_out.close()
        load.publish(counters, base, stats)
    # The program's CPU (its JVM's start included) and this reader's.
    load.write_producer_meta(args, load.NO_PRIORITY, time.process_time() + _children_cpu_s() - cpu_start, stats[0],
                             replaced, client=describe())
    if code:
        tail = log.read_text().strip().splitlines()[-5:]
        raise RuntimeError(f"the Java producer {args.index} exited with code {code}: {' | '.join(tail)}")


def _children_cpu_s() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _forward_end(proc: subprocess.Popen, end: Any, end_ns: int, done: threading.Event) -> None:
    """Tell the program whenever the runner moves the end of the load later."""
    told = end_ns
    while not done.wait(0.1):
        now = int(end.value) if end is not None else told
        if now > told and proc.stdin is not None:
            try:
                proc.stdin.write(f"end {now}\n")
                proc.stdin.flush()
            except (BrokenPipeError, ValueError):
                return
            told = now


"""How fast is the load generator, and what does its ledger cost? Measured side by side in
one run on the same cluster, same acks, message size and batching:

1. Kafka's own ProducerPerformance (kafka-producer-perf-test), unthrottled;
2. the load generator, unthrottled, ledger on;
3. the load generator, unthrottled, ledger off;
4. the load generator at half the rate reached in 2, ledger on: achieved / target rate and
   the send delay (actual send - intended send) percentiles; then at a quarter and an eighth
   of it, to show the rate below which the send delay stays under a millisecond when the
   brokers share the machine's cores;
5. the C reference loop (`native/sendloop.c`: the same schedule on the same librdkafka, no
   Python, no ledger) unthrottled, at the generator's half rate, and at half its own maximum:
   the send delay this machine allows, beside the generator's (`--no-native` leaves it out).

Each measurement is repeated in rounds; the unthrottled ones run in one order, then in the
reverse order the next round, so an even count of rounds gives every pair both orders. A ratio
is the median of the rounds' own ratios (each round measures both sides back to back), the
other figures medians of the rounds; the raw figures are saved as JSON.

    python -m benchmarks.perf.producer_throughput [--inventory inventories/local] [--repeat 4]
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from benchmarks.core import paths
from benchmarks.harness import load, producer
from benchmarks.hosts import inventory as inventory_lib
from benchmarks.kafka import topics
from benchmarks.perf import children_cpu_s, native_loop, save_figures
from benchmarks.record import ledger

TOPIC = "kb-perf"
LOWER_FRACTIONS = (4, 8)  # of the maximum rate, besides the half the target is set at
WARMUP_S = 1.0  # as in a run, the first second is warm-up (the client's first batches, cold code paths)
KEYS = 64


def client_props(acks: str = "all") -> dict[str, str]:
    """The producer properties every measurement shares (the generator, the C loop, perf-test)."""
    return {"acks": acks, "linger.ms": "5", "batch.size": "65536", "compression.type": "none"}


def delay_quantiles(delays_ms) -> dict[str, float]:
    """p50 / p99 / p99.9 of send delays in ms (the same interpolation for both loops)."""
    p50, p99, p999 = pc.quantile(delays_ms, q=[0.5, 0.99, 0.999]).to_pylist()
    return {"send_delay_p50_ms": p50, "send_delay_p99_ms": p99, "send_delay_p999_ms": p999}


def cpu_cost(cpu_s: float, messages: int, seconds: float) -> dict[str, float]:
    """What sending cost the machine: CPU microseconds per message, and cores held on average."""
    return {"cpu_us_per_msg": 1e6 * cpu_s / max(messages, 1), "cpu_cores": cpu_s / seconds}


RATIOS = ("generator_over_perf_test", "ledger_on_over_off")


def round_ratios(perf: float, on: dict[str, float], off: dict[str, float], order: str) -> dict[str, float | str]:
    """One round's ratios, each from two measurements taken back to back: the generator (ledger
    on) over producer-perf-test, and ledger on over ledger off."""
    return {"order": order, "generator_over_perf_test": on["acked_per_s"] / perf,
            "ledger_on_over_off": on["acked_per_s"] / off["acked_per_s"]}


def perf_test(inv, records: int, size: int, props: dict[str, str]) -> float:
    broker = inv.brokers[0]
    args = [broker.tool, "producer-perf-test", "--topic", TOPIC, "--num-records", str(records), "--record-size",
            str(size), "--throughput", "-1", "--producer-props", f"bootstrap.servers={inv.bootstrap_servers}",
            *[f"{k}={v}" for k, v in props.items()]]
    out = subprocess.run(args, capture_output=True, text=True, check=True, timeout=600).stdout
    match = re.findall(r"(\d+) records sent, ([\d.]+) records/sec", out)
    if not match:
        raise RuntimeError(f"no summary line in producer-perf-test output:\n{out[-2000:]}")
    return float(match[-1][1])


def generator(inv, producers: int, seconds: float, size: int, props: dict[str, str], rate: float | None,
              ledger_on: bool, warmup_s: float = WARMUP_S) -> dict[str, float]:
    """Run the load generator's producer processes; acked/s and, with a ledger, send delays."""
    ctx = multiprocessing.get_context("spawn")
    counters = ctx.Array("q", load.COUNTERS * producers, lock=False)
    with tempfile.TemporaryDirectory(prefix="kb-perf-") as tmp:
        start_ns = time.time_ns() + int(2e9)
        end_ns = start_ns + int((warmup_s + seconds) * 1e9)
        procs = []
        for index in range(producers):
            args = load.ProducerArgs(index, f"perf{index}", inv.connection(), TOPIC, dict(props),
                                     rate / producers if rate else None, start_ns, end_ns, size, KEYS, tmp, ledger_on)
            proc = ctx.Process(target=producer.producer_main, args=(args, counters, index))
            proc.start()
            procs.append(proc)
        for proc in procs:
            proc.join()
        elapsed = (time.time_ns() - start_ns) / 1e9
        acked = sum(counters[i * load.COUNTERS + 1] for i in range(producers))
        result = {"acked": acked, "elapsed_s": elapsed, "acked_per_s": acked / elapsed}
        if ledger_on:
            table = ledger.read(Path(tmp), ledger.PRODUCE_SCHEMA)
            table = table.filter(pc.greater_equal(table.column("intended_ns"), start_ns + int(warmup_s * 1e9)))
            delay = pc.divide(pc.cast(pc.subtract(table.column("sent_ns"), table.column("intended_ns")), "double"), 1e6)
            result.update(sent=table.num_rows, **delay_quantiles(delay))
            if rate:
                result["achieved_over_target"] = table.num_rows / (rate * seconds)
                metas = load.producer_meta(Path(tmp))
                result["send_thread_nice"] = [meta["send_thread_nice"] for meta in metas]
                result.update(cpu_cost(sum(m["cpu_s"] for m in metas), sum(m["messages"] for m in metas), elapsed))
    return result


def native(binary: Path, inv, producers: int, seconds: float, size: int, props: dict[str, str],
           rate: float | None, warmup_s: float = WARMUP_S) -> dict[str, float]:
    """The C reference loop, as `generator` runs the generator: acked/s and, on a schedule,
    achieved / target and the send delays after the warm-up."""
    cpu_before = children_cpu_s()
    with tempfile.TemporaryDirectory(prefix="kb-perf-native-") as tmp:
        got = native_loop.run(binary, inv.bootstrap_servers, TOPIC, props, producers, rate, time.time_ns() + int(2e9),
                              warmup_s + seconds, warmup_s, size, KEYS, Path(tmp))
    result = {"sent": got.sent, "acked": got.acked, "failed": got.failed, "elapsed_s": got.elapsed_s,
              "acked_per_s": got.acked / got.elapsed_s}
    if rate:
        result.update(achieved_over_target=len(got.delays_ms) / (rate * seconds),
                      **delay_quantiles(pa.array(got.delays_ms)),
                      **cpu_cost(children_cpu_s() - cpu_before, got.sent, got.elapsed_s))
    return result


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inventory", type=Path, default=paths.DEFAULT_INVENTORY)
    parser.add_argument("--repeat", type=int, default=4, help="rounds (an even count balances the order)")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each generator measurement")
    parser.add_argument("--records", type=int, default=500_000, help="records of each perf-test measurement")
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--producers", type=int, default=2, help="producer processes of the generator")
    parser.add_argument("--acks", default="all")
    parser.add_argument("--warmup-rounds", type=int, default=1, help="discarded rounds before the measured ones")
    parser.add_argument("--native", action=argparse.BooleanOptionalAction, default=True,
                        help="also measure the C reference loop (needs a C compiler and librdkafka's headers)")
    return parser.parse_args()


@dataclasses.dataclass
class Bench:
    """One run of the benchmark: its settings, the cluster, the C loop if built, and every
    measurement so far, by kind (`rows`)."""

    args: argparse.Namespace
    inv: Any
    props: dict[str, str]
    binary: Path | None
    rows: dict[str, list] = dataclasses.field(default_factory=lambda: {
        "perf_test": [], "ledger_on": [], "ledger_off": [], "half_rate": [], "lower_rates": [],
        "native_max": [], "native_same_rate": [], "native_half_own": [], "rounds": []})

    def generator(self, rate: float | None, ledger_on: bool) -> dict[str, float]:
        a = self.args
        return generator(self.inv, a.producers, a.seconds, a.size, self.props, rate, ledger_on)

    def c_loop(self, rate: float | None) -> dict[str, float]:
        assert self.binary is not None  # called only when the C loop was built
        a = self.args
        return native(self.binary, self.inv, a.producers, a.seconds, a.size, self.props, rate)

    def perf_test(self) -> float:
        return perf_test(self.inv, self.args.records, self.args.size, self.props)

    def warm_up(self) -> None:
        """A freshly started cluster runs well below its speed for its first minutes (the
        brokers' JIT): discarded rounds of unthrottled load first."""
        for _ in range(self.args.warmup_rounds):
            print("warm-up round (discarded) ...", flush=True)
            self.perf_test()
            self.generator(None, False)
            self.generator(None, False)

    def round(self, number: int) -> None:
        """One round: the unthrottled measurements, in reversed order every other round (a
        cluster still getting faster, its JIT, would otherwise favour whichever always runs
        later; seen here: ledger on / off 0.86 in a fixed order on a fresh cluster, 1.01
        alternating), then the generator on a schedule, then the C loop."""
        rows = self.rows
        unthrottled = [("perf_test", self.perf_test)] + [
            (f"ledger_{name}", lambda on=on: self.generator(None, on)) for name, on in (("on", True), ("off", False))]
        for name, measure in unthrottled if number % 2 else reversed(unthrottled):
            rows[name].append(measure())
        rows["rounds"].append(round_ratios(rows["perf_test"][-1], rows["ledger_on"][-1], rows["ledger_off"][-1],
                                           "forward" if number % 2 else "reversed"))
        peak = rows["ledger_on"][-1]["acked_per_s"]
        rows["half_rate"].append({"target_per_s": peak / 2, **self.generator(peak / 2, True)})
        for fraction in LOWER_FRACTIONS:
            rows["lower_rates"].append({"fraction": f"1/{fraction}", "target_per_s": peak / fraction,
                                        **self.generator(peak / fraction, True)})
        lower = ", ".join(f"{r['fraction']} {r['send_delay_p99_ms']:.3f} ms"
                          for r in rows["lower_rates"][-len(LOWER_FRACTIONS):])
        print(f"round {number} ({rows['rounds'][-1]['order']}): perf-test {rows['perf_test'][-1]:,.0f}/s, generator ledger on "
              f"{rows['ledger_on'][-1]['acked_per_s']:,.0f}/s, off {rows['ledger_off'][-1]['acked_per_s']:,.0f}/s, "
              f"half rate achieved/target {rows['half_rate'][-1]['achieved_over_target']:.4f}, "
              f"send delay p99 {rows['half_rate'][-1]['send_delay_p99_ms']:.3f} ms (at {lower})", flush=True)
        if self.binary is not None:
            rows["native_max"].append(self.c_loop(None))
            rows["native_same_rate"].append({"target_per_s": peak / 2, **self.c_loop(peak / 2)})
            own = rows["native_max"][-1]["acked_per_s"] / 2
            rows["native_half_own"].append({"target_per_s": own, **self.c_loop(own)})
            print(f"round {number}: C loop max {rows['native_max'][-1]['acked_per_s']:,.0f}/s, send delay p99 at the "
                  f"generator's half rate {rows['native_same_rate'][-1]['send_delay_p99_ms']:.3f} ms, at half its own "
                  f"max {rows['native_half_own'][-1]['send_delay_p99_ms']:.3f} ms", flush=True)

    def results(self) -> dict[str, Any]:
        """The medians of the rounds, the medians of the rounds' ratios, the targets, the raw rows."""
        rows, args, inv, med = self.rows, self.args, self.inv, statistics.median
        at_fraction = {f"1/{n}": [r for r in rows["lower_rates"] if r["fraction"] == f"1/{n}"] for n in LOWER_FRACTIONS}
        native_medians = {} if self.binary is None else {
            "native_max_per_s": med(r["acked_per_s"] for r in rows["native_max"]),
            "native_same_rate_send_delay_p99_ms": med(r["send_delay_p99_ms"] for r in rows["native_same_rate"]),
            "native_same_rate_achieved_over_target": med(r["achieved_over_target"] for r in rows["native_same_rate"]),
            "native_half_own_send_delay_p99_ms": med(r["send_delay_p99_ms"] for r in rows["native_half_own"]),
            "native_same_rate_cpu_us_per_msg": med(r["cpu_us_per_msg"] for r in rows["native_same_rate"])}
        return {
            "settings": {**self.props, "size": args.size, "producers": args.producers, "repeat": args.repeat,
                         "warmup_rounds": args.warmup_rounds},
            "cluster": {"inventory": str(args.inventory), "kafka_version": inv.kafka_version,
                        "metadata_mode": inv.metadata_mode, "brokers": len(inv.brokers)},
            "medians": {"perf_test_per_s": med(rows["perf_test"]),
                        "ledger_on_per_s": med(r["acked_per_s"] for r in rows["ledger_on"]),
                        "ledger_off_per_s": med(r["acked_per_s"] for r in rows["ledger_off"]),
                        "half_rate_achieved_over_target": med(r["achieved_over_target"] for r in rows["half_rate"]),
                        "half_rate_send_delay_p99_ms": med(r["send_delay_p99_ms"] for r in rows["half_rate"]),
                        **{f"rate_{f.replace('/', '_')}_send_delay_p99_ms": med(r["send_delay_p99_ms"] for r in rs)
                           for f, rs in at_fraction.items()},
                        "half_rate_cpu_us_per_msg": med(r["cpu_us_per_msg"] for r in rows["half_rate"]),
                        **{f"rate_{f.replace('/', '_')}_cpu_us_per_msg": med(r["cpu_us_per_msg"] for r in rs)
                           for f, rs in at_fraction.items()},
                        **native_medians},
            "ratios": {name: med(r[name] for r in rows["rounds"]) for name in RATIOS},
            "targets": {"generator_over_perf_test": ">= 1.0", "ledger_on_over_off": ">= 0.9",
                        "half_rate_achieved_over_target": ">= 0.99", "half_rate_send_delay_p99_ms": "<= 1.0"},
            "raw": rows,
        }


def print_results(results: dict[str, Any]) -> None:
    medians, ratios, settings = results["medians"], results["ratios"], results["settings"]
    props = ", ".join(f"{k} {settings[k]}" for k in client_props())
    on, perf, p99, cpu_half = (medians["ledger_on_per_s"], medians["perf_test_per_s"],
                               medians["half_rate_send_delay_p99_ms"], medians["half_rate_cpu_us_per_msg"])
    print(f"\nmedians of {settings['repeat']} rounds ({settings['size']} B, {props}):")
    print(f"  generator (ledger on), producer-perf-test  : {on:,.0f}, {perf:,.0f}/s")
    print(f"  generator / producer-perf-test, per round  : {ratios['generator_over_perf_test']:.2f}   (target >= 1.0)")
    print(f"  ledger on / ledger off, per round          : {ratios['ledger_on_over_off']:.2f}   (target >= 0.9)")
    print(f"  achieved / target at half rate             : {medians['half_rate_achieved_over_target']:.4f}   (target >= 0.99)")
    print(f"  send delay p99 at half rate                : {p99:.3f} ms   (target <= 1 ms)")
    for n in LOWER_FRACTIONS:
        print(f"  send delay p99 at 1/{n} of the maximum rate   : {medians[f'rate_1_{n}_send_delay_p99_ms']:.3f} ms")
    # On a schedule the loop wakes for each message: its CPU per message grows as the rate falls.
    print(f"  CPU per message at half rate               : {cpu_half:.1f} us")
    for n in LOWER_FRACTIONS:
        print(f"  CPU per message at 1/{n} of the maximum rate  : {medians[f'rate_1_{n}_cpu_us_per_msg']:.1f} us")
    if "native_max_per_s" in medians:
        same, own = medians["native_same_rate_send_delay_p99_ms"], medians["native_half_own_send_delay_p99_ms"]
        print("C reference loop (same schedule and librdkafka, no Python, no ledger), medians:")
        print(f"  maximum rate                               : {medians['native_max_per_s']:,.0f}/s")
        print(f"  send delay p99 at the generator's half rate: {same:.3f} ms   (generator / C loop: {p99 / same:.2f})")
        print(f"  send delay p99 at half its own maximum     : {own:.3f} ms")
        cpu_c = medians["native_same_rate_cpu_us_per_msg"]
        print(f"  CPU per message at the generator's half rate: {cpu_c:.1f} us   (generator / C loop: {cpu_half / cpu_c:.2f})")


def main() -> None:
    args = _arguments()
    binary = None
    if args.native:
        try:
            binary = native_loop.build()
        except native_loop.NativeUnavailable as exc:
            print(f"C reference loop left out: {exc}", flush=True)
    inv = inventory_lib.load(args.inventory)
    topics.ensure_topic(inv.connection(), TOPIC, 3, min(3, len(inv.brokers)))
    bench = Bench(args, inv, client_props(args.acks), binary)
    bench.warm_up()
    for number in range(1, args.repeat + 1):  # interleaved, so drift of the machine hits all alike
        bench.round(number)
    results = bench.results()
    print_results(results)
    print(f"raw figures: {save_figures('producer', results)}")


if __name__ == "__main__":
    main()

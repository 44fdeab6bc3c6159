"""`kafka-bench cluster up | down | status | smoke`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import yaml

from benchmarks.cli.console import PlaybookProgress, console, print_status, stdout
from benchmarks.core import connection as connection_lib
from benchmarks.core import paths
from benchmarks.core.exit_codes import ExitCode
from benchmarks.harness import smoke as smoke_lib
from benchmarks.harness import steady
from benchmarks.hosts import inventory as inventory_lib
from benchmarks.hosts.ansible import AnsibleRunner, PlaybookResult, PlaybookRunner, summarize_failures
from benchmarks.kafka import cluster as cluster_lib

#: Plays whose failures mean "the input is wrong" rather than "a host failed".
VALIDATION_PLAYS = ("Validate the whole inventory before touching any host",)

inventory_option = click.option(
    "--inventory", "-i", "inventory_path", type=click.Path(path_type=Path), default=paths.DEFAULT_INVENTORY,
    show_default=True, help="Ansible inventory of the cluster (a directory or file).")


def _extra_vars(values: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in values:
        if "=" not in item:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--extra-vars")
        key, value = item.split("=", 1)
        out[key] = yaml.safe_load(value) if value else ""
    return out


extra_vars_option = click.option(
    "--extra-vars", "-e", "extra_vars", multiple=True, metavar="KEY=VALUE",
    help="Variable for the playbook (value read as YAML), e.g. -e kafka_heap_size=1g.")


def playbook_runner(ctx: click.Context) -> PlaybookRunner:
    return (ctx.obj or {}).get("runner") or AnsibleRunner()


def load_inventory_or_exit(path: Path) -> inventory_lib.ClusterInventory:
    try:
        return inventory_lib.load(path)
    except inventory_lib.InventoryError as exc:
        console.print(f"[red]error:[/] {exc}")
        raise click.exceptions.Exit(ExitCode.INVALID_INPUT) from exc


def run_playbook(ctx: click.Context, title: str, playbook: str, inventory_path: Path,
                 extravars: dict[str, Any] | None = None, limit: str | None = None,
                 check: bool = False) -> PlaybookResult:
    """Run a playbook with progress; exit with the right code when it fails."""
    with PlaybookProgress(title) as progress:
        result = playbook_runner(ctx).run(playbook, inventory_path, extravars=extravars, limit=limit, check=check,
                                  progress=progress)
    recap = ", ".join(f"{key}={result.count(key)}" for key in ("ok", "changed", "failures", "dark"))
    console.print(f"{playbook}: {result.status} in {result.elapsed_s:.0f} s ({recap})")
    if not result.ok:
        console.print(f"[red]{summarize_failures(result.failures) or 'ansible-playbook failed'}[/]")
        if result.artifact_dir:
            console.print(f"ansible-runner artifacts: {result.artifact_dir}")
        invalid = result.failures and all(f.play in VALIDATION_PLAYS for f in result.failures)
        raise click.exceptions.Exit(ExitCode.INVALID_INPUT if invalid else ExitCode.PLAYBOOK_FAILED)
    return result


def _client_settings(inv: inventory_lib.ClusterInventory) -> dict[str, dict[str, Any]]:
    try:
        return inv.client_settings()
    except connection_lib.ConnectionSettingsError as exc:
        console.print(f"[yellow]warning:[/] {exc}")
        return {}


def print_clients(clients: dict[str, dict[str, Any]]) -> None:
    """Where a client finds what it needs to connect, per profile (the files hold the secrets)."""
    for profile, c in clients.items():
        who = f" as {c['user']}" if c["user"] else ""
        stdout.print(f"client settings {profile}{' (default)' if c['default'] else ''}: {c['librdkafka']} "
                     f"(librdkafka), {c['java'] or '-'} (Java); {c['bootstrap']}{who}")


def _describe(inv: inventory_lib.ClusterInventory) -> cluster_lib.ClusterStatus:
    try:
        return cluster_lib.describe(inv)
    except cluster_lib.ClusterUnreachable as exc:
        console.print(f"[red]error:[/] {exc}")
        raise click.exceptions.Exit(ExitCode.UNREACHABLE) from exc


@click.group()
def cluster() -> None:
    """Deploy, inspect and tear down a Kafka cluster (KRaft, or ZooKeeper mode) with the project's playbooks."""


@cluster.command()
@inventory_option
@extra_vars_option
@click.option("--check", is_flag=True, help="Only show what would change (ansible-playbook --check).")
@click.pass_context
def up(ctx: click.Context, inventory_path: Path, extra_vars: tuple[str, ...], check: bool) -> None:
    """Deploy and start the cluster (playbooks/site.yml), then show its status."""
    inv = load_inventory_or_exit(inventory_path)
    metadata = (f"a KRaft quorum of {len(inv.controllers)} controller(s)" if inv.kraft
                else f"{len(inv.zookeepers)} ZooKeeper server(s)")
    run_playbook(ctx, f"Deploying Kafka {inv.kafka_version}: {len(inv.brokers)} brokers and {metadata} "
                      f"from {inventory_path}", "site.yml", inventory_path, _extra_vars(extra_vars), check=check)
    if check:
        return
    with console.status("creating the cluster's internal topics"):
        try:
            steady.ensure_internal_topics(inv.connection())
            steady.wait_recovered(inv, timeout_s=120)
        except steady.NotSteady as exc:
            console.print(f"[yellow]warning:[/] {exc}")
    status = _describe(inv)
    print_status(status)
    print_clients(_client_settings(inv))
    if not status.healthy:
        raise click.exceptions.Exit(ExitCode.UNHEALTHY)


@cluster.command()
@inventory_option
@click.option("--purge", is_flag=True,
              help="Also delete configuration, data, logs and the installation (playbooks/teardown.yml).")
@click.option("--limit", "-l", default=None, help="Only these inventory hosts (Ansible pattern).")
@click.pass_context
def down(ctx: click.Context, inventory_path: Path, purge: bool, limit: str | None) -> None:
    """Stop the brokers, then the KRaft controllers or ZooKeeper (playbooks/stop.yml); with --purge, tear
    everything down."""
    load_inventory_or_exit(inventory_path)
    if purge:
        run_playbook(ctx, "Tearing the cluster down", "teardown.yml", inventory_path, limit=limit)
    else:
        run_playbook(ctx, "Stopping the cluster", "stop.yml", inventory_path, limit=limit)


@cluster.command()
@inventory_option
@click.option("--limit", "-l", default=None, help="Only these inventory hosts (Ansible pattern).")
@click.pass_context
def start(ctx: click.Context, inventory_path: Path, limit: str | None) -> None:
    """Start (or resume) stopped, killed or paused services (playbooks/start.yml)."""
    load_inventory_or_exit(inventory_path)
    run_playbook(ctx, "Starting the cluster", "start.yml", inventory_path, limit=limit)


@cluster.command()
@inventory_option
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@click.option("--internal", is_flag=True, help="Include internal topics (__consumer_offsets, ...).")
def status(inventory_path: Path, as_json: bool, internal: bool) -> None:
    """Brokers, controller, and leader / replicas / ISR of every partition.

    Exits 0 when healthy, 5 when a broker or ZooKeeper is down or a partition is
    under-replicated or offline, 6 when no broker answers."""
    inv = load_inventory_or_exit(inventory_path)
    try:
        status_ = cluster_lib.describe(inv, include_internal=internal)
    except cluster_lib.ClusterUnreachable as exc:
        if as_json:
            stdout.print_json(json.dumps({"healthy": False, "problems": [str(exc)], "brokers": [], "partitions": []}))
        else:
            console.print(f"[red]error:[/] {exc}")
        raise click.exceptions.Exit(ExitCode.UNREACHABLE) from exc
    clients = _client_settings(inv)
    if as_json:
        click.echo(json.dumps({**status_.to_dict(), "clients": clients}, indent=2))
    else:
        print_status(status_)
        print_clients(clients)
    if not status_.healthy:
        raise click.exceptions.Exit(ExitCode.UNHEALTHY)


@cluster.command()
@inventory_option
@click.option("--topic", default="purchases", show_default=True)
@click.option("--partitions", default=3, show_default=True, type=click.IntRange(1))
@click.option("--replication-factor", default=3, show_default=True, type=click.IntRange(1))
@click.option("--messages", default=1000, show_default=True, type=click.IntRange(1))
def smoke(inventory_path: Path, topic: str, partitions: int, replication_factor: int, messages: int) -> None:
    """Create a replicated topic, produce with acks=all, read everything back."""
    inv = load_inventory_or_exit(inventory_path)
    if replication_factor > len(inv.brokers):
        raise click.BadParameter(f"{replication_factor} > {len(inv.brokers)} brokers in {inventory_path}",
                                 param_hint="--replication-factor")
    with console.status(f"producing {messages} messages to {topic} and reading them back"):
        result = smoke_lib.run_smoke(inv.connection(), topic, partitions, replication_factor, messages)
    stdout.print(f"{topic}: sent {result.sent}, acked {result.acked} in {result.produce_s:.2f} s, "
                 f"failed {result.failed}, read back {result.consumed} in {result.consume_s:.2f} s, "
                 f"missing {len(result.missing)}")
    for error in result.errors:
        console.print(f"  [red]{error}[/]")
    if not result.ok:
        raise click.exceptions.Exit(ExitCode.FAILURE)

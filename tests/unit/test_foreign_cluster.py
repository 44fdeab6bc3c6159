"""A cluster this project did not deploy (kafka_bench_service_control: systemd): the playbooks that
install, change or remove services refuse its hosts before touching any, naming the host and why."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT

# Each of these would run this project's roles on the hosts.
CHANGING = ["site.yml", "teardown.yml", "stop.yml", "rolling-restart.yml", "upgrade.yml", "migrate-to-kraft.yml",
            "rollback-to-zookeeper.yml", "replace-broker.yml", "reassign-partitions.yml", "features.yml"]


def test_every_playbook_that_changes_services_starts_with_the_refusal():
    for name in CHANGING:
        text = (ROOT / "playbooks" / name).read_text()
        first_play = text[text.index("\n- name:") + 1:].split("\n\n")[0]
        assert "ansible.builtin.import_playbook: own-cluster.yml" in first_play, name


@pytest.mark.parametrize("playbook", ["teardown.yml", "site.yml"])
def test_a_cp_ansible_cluster_is_refused_before_any_host_is_reached(runner, tmp_path, playbook):
    # Hosts that cannot be reached (port 1 on loopback): a refusal that came after any connection
    # would show as unreachable, not as the check's failure.
    (tmp_path / "hosts.yml").write_text(
        "all:\n  vars: {kafka_bench_service_control: systemd, ansible_host: 127.0.0.1, ansible_port: 1}\n"
        "  children:\n    zookeeper:\n      hosts: {zk1: {}}\n    kafka_broker:\n      hosts: {k1: {}, k2: {}}\n")
    result = runner.run(playbook, tmp_path)
    assert not result.ok
    assert {f.host for f in result.failures} == {"zk1", "k1", "k2"}
    assert not any(f.unreachable for f in result.failures)
    assert all(f.task == "Check that this project deployed the host's services" for f in result.failures)
    assert "k1: kafka_bench_service_control is systemd: its services were deployed by something else" in " ".join(
        " ".join(f.message.split()) for f in result.failures)

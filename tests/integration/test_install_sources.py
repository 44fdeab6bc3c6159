"""The three install sources of the kafka role: pinned Maven jars, the Apache release archive
(served here from a file:// mirror, checksum read from its .sha512 in Apache's format), and
a local archive on the controller. Tampered checksums are refused and leave nothing behind."""

from __future__ import annotations

import hashlib
import shutil
import tarfile
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, assert_ok

pytestmark = pytest.mark.slow

PLAYBOOK = str(ROOT / "tests" / "playbooks" / "install-kafka.yml")
HOME = "kafka_2.13-3.9.2"
CACHE = ROOT / ".state" / "cache"


def gpg_print_md(name: str, data: bytes) -> str:
    """The format of Apache's .sha512 files: 'name: 1A2B3C4D 5E6F...' wrapped over lines."""
    digest = hashlib.sha512(data).hexdigest().upper()
    groups = [digest[i:i + 8] for i in range(0, len(digest), 8)]
    lines = [" ".join(groups[i:i + 8]) for i in range(0, len(groups), 8)]
    pad = " " * (len(name) + 2)
    return f"{name}: " + ("\n" + pad).join(lines) + "\n"


@pytest.fixture(scope="module")
def target(tmp_path_factory) -> Path:
    inv = tmp_path_factory.mktemp("install") / "inventory.yml"
    inv.write_text(yaml.safe_dump({"all": {"hosts": {"install-target": {
        "ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}}}))
    return inv


@pytest.fixture(scope="module")
def maven_install(runner, target, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("maven")
    result = assert_ok(runner.run(PLAYBOOK, target, extravars={
        "kafka_install_source": "maven", "kafka_install_root": str(root), "kafka_download_cache_dir": str(CACHE)}))
    assert result.count("changed") >= 1
    return root / HOME


@pytest.fixture(scope="module")
def mirror(maven_install, tmp_path_factory) -> Path:
    """An Apache-like mirror: kafka/3.9.2/kafka_2.13-3.9.2.tgz and its .sha512."""
    mirror = tmp_path_factory.mktemp("mirror")
    release = mirror / "kafka" / "3.9.2"
    release.mkdir(parents=True)
    (maven_install.parent / "bin").mkdir(exist_ok=True)
    archive = release / f"{HOME}.tgz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(maven_install, arcname=HOME)
    (release / f"{HOME}.tgz.sha512").write_text(gpg_print_md(archive.name, archive.read_bytes()))
    return mirror


def jars(home: Path) -> set[str]:
    return {p.name for p in (home / "libs").glob("*.jar")}


def test_maven_install_holds_the_pinned_jars(maven_install):
    pinned = yaml.safe_load((ROOT / "roles/kafka/vars/main.yml").read_text())["kafka_pinned_artifacts"]["3.9.2"]
    assert jars(maven_install) == {f"{a['artifact']}-{a['version']}.jar" for a in pinned}
    for artifact in pinned:
        data = (maven_install / "libs" / f"{artifact['artifact']}-{artifact['version']}.jar").read_bytes()
        assert hashlib.sha256(data).hexdigest() == artifact["sha256"]


def test_jars_through_the_controller_come_back_after_a_teardown(runner, target, maven_install, tmp_path):
    """Hosts without a route to the repository get the jars as one archive copied from the
    controller, kept beside the installation; a teardown removes the installation, not the archive,
    and the next deploy must unpack the jars again although the copy has nothing to change."""
    extravars = {"kafka_install_source": "maven", "kafka_fetch_on_controller": True,
                 "kafka_install_root": str(tmp_path), "kafka_download_cache_dir": str(CACHE)}
    assert_ok(runner.run(PLAYBOOK, target, extravars=extravars))
    assert jars(tmp_path / HOME) == jars(maven_install)
    shutil.rmtree(tmp_path / HOME)  # what playbooks/teardown.yml removes
    assert_ok(runner.run(PLAYBOOK, target, extravars=extravars))
    assert jars(tmp_path / HOME) == jars(maven_install)


def test_maven_install_refuses_a_tampered_checksum(runner, target, tmp_path):
    bad = [{"group": "org.apache.kafka", "artifact": "kafka-clients", "version": "3.9.2", "sha256": "0" * 64}]
    result = runner.run(PLAYBOOK, target, extravars={
        "kafka_install_source": "maven", "kafka_install_root": str(tmp_path), "kafka_maven_artifacts": bad})
    assert not result.ok
    assert any("checksum mismatch" in f.message for f in result.failures), result.failures
    assert not list((tmp_path / HOME / "libs").glob("*.jar"))


def test_apache_archive_install_verifies_the_published_checksum(runner, target, mirror, maven_install, tmp_path):
    extravars = {"kafka_install_source": "apache_archive", "kafka_apache_mirror": f"file://{mirror}",
                 "kafka_install_root": str(tmp_path)}
    first = assert_ok(runner.run(PLAYBOOK, target, extravars=extravars))
    assert first.count("changed") >= 2  # download and unpack
    assert jars(tmp_path / HOME) == jars(maven_install)
    second = assert_ok(runner.run(PLAYBOOK, target, extravars=extravars))
    assert second.count("changed") == 0


@pytest.mark.long  # a tampered checksum is refused on the Maven source in `make test`
def test_apache_archive_with_a_wrong_checksum_is_refused(runner, target, mirror, tmp_path):
    result = runner.run(PLAYBOOK, target, extravars={
        "kafka_install_source": "apache_archive", "kafka_apache_mirror": f"file://{mirror}",
        "kafka_install_root": str(tmp_path), "kafka_archive_checksum": "sha512:" + "0" * 128})
    assert not result.ok
    assert any("checksum mismatch" in f.message for f in result.failures), result.failures
    assert not (tmp_path / HOME).exists()
    assert not (tmp_path / f"{HOME}.tgz").exists()


def test_local_archive_install(runner, target, mirror, maven_install, tmp_path):
    archive = mirror / "kafka" / "3.9.2" / f"{HOME}.tgz"
    checksum = "sha512:" + hashlib.sha512(archive.read_bytes()).hexdigest()
    extravars = {"kafka_install_source": "local_archive", "kafka_local_archive": str(archive),
                 "kafka_local_archive_checksum": checksum, "kafka_install_root": str(tmp_path / "ok")}
    assert_ok(runner.run(PLAYBOOK, target, extravars=extravars))
    assert jars(tmp_path / "ok" / HOME) == jars(maven_install)
    assert assert_ok(runner.run(PLAYBOOK, target, extravars=extravars)).count("changed") == 0

    bad = dict(extravars, kafka_install_root=str(tmp_path / "bad"), kafka_local_archive_checksum="sha512:" + "f" * 128)
    result = runner.run(PLAYBOOK, target, extravars=bad)
    assert not result.ok and any("checksum mismatch" in f.message for f in result.failures)
    assert not (tmp_path / "bad" / HOME).exists()

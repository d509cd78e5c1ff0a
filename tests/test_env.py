"""Tests of latscope.env against fake /proc and /sys trees (and one capture of this machine).

The facts the probe records (host, kernel, CPU model, clock source in use, filesystem) are
not read by the lab: with a fake tree, a test gives them as the probe's record (`probe_env`),
as a run does with its sample file's header."""

import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest

from conftest import run_probe
from latscope.env import (
    Finding,
    capture,
    check,
    compatible,
    costly_mitigations,
    cpu_busy,
    format_cpulist,
    frequency_control,
    parse_cpulist,
    parse_mountinfo,
    render,
)

MODEL = "Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz"
FLAGS = "fpu tsc msr pae rdtscp lm constant_tsc nonstop_tsc tsc_known_freq pni sse4_2 avx2"

MOUNTINFO = """\
22 28 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
23 28 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:2 - sysfs sysfs rw
28 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro
30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate
40 28 8:17 / /mnt rw,relatime shared:20 - ext4 /dev/sdb1 rw
41 40 8:33 / /mnt/my\\040disk rw,noatime shared:21 - xfs /dev/sdc1 rw,attr2,inode64
42 28 0:40 / /scratch rw,relatime shared:22 - ext4 /dev/sdd1 rw
43 28 0:41 / /scratch rw,nosuid shared:23 - tmpfs tmpfs rw,size=1024k
"""


def probe_env(
    release: str = "6.8.0-test",
    model: str = MODEL,
    clocksource: str | None = "tsc",
    filesystem: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The probe's record of the good tree's machine (the sample file header's ``env``)."""
    return {
        "schema": 2,
        "hostname": "bench1",
        "kernel": {"sysname": "Linux", "release": release, "version": "#1", "machine": "x86_64"},
        "cpu": {"model": model, "online_count": 4},
        "clocksource": {"current": clocksource},
        "process": {"pid": 1, "uid": 0, "euid": 0},
        "filesystem": filesystem,
    }


# The filesystems of MOUNTINFO as the probe records them (its choice of the mount of a path is
# tested in probe/tests/test_platform.c, on the same table).
XFS = {
    "path": "/mnt/my disk/data/run.bin",
    "fstype": "xfs",
    "source": "/dev/sdc1",
    "mount_point": "/mnt/my disk",
    "mount_options": "rw,noatime",
    "super_options": "rw,attr2,inode64",
}
ROOT_FS = dict(XFS, path="/home/u/f", fstype="ext4", source="/dev/sda1", mount_point="/")
TMPFS = dict(XFS, path="/scratch/f", fstype="tmpfs", source="tmpfs", mount_point="/scratch")


def write_tree(base: Path, files: dict[str, str | bytes]) -> str:
    """Write files (relative path -> content) below base; return base as a root for capture."""
    for rel, content in files.items():
        p = base / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)
    return str(base)


def cpuinfo(n: int, model: str = MODEL, flags: str = FLAGS) -> str:
    blocks = [
        f"processor\t: {i}\nvendor_id\t: GenuineIntel\nmodel name\t: {model}\nflags\t\t: {flags}\n"
        for i in range(n)
    ]
    return "\n".join(blocks)


def good_files(ncpu: int = 4) -> dict[str, str | bytes]:
    """A quiet bare-metal machine set up for benchmarking: nothing in it deserves a warning."""
    cpu = "sys/devices/system/cpu"
    files: dict[str, str | bytes] = {
        "proc/sys/kernel/osrelease": "6.8.0-test\n",
        "proc/sys/kernel/version": "#1 SMP PREEMPT_DYNAMIC Mon Jan 1 00:00:00 UTC 2024\n",
        "proc/sys/kernel/arch": "x86_64\n",
        "proc/sys/kernel/hostname": "bench1\n",
        "proc/version": "Linux version 6.8.0-test (gcc 13) #1 SMP PREEMPT_DYNAMIC\n",
        "proc/cmdline": "BOOT_IMAGE=/vmlinuz-6.8.0 root=/dev/sda1 ro isolcpus=2-3 "
        "nohz_full=2-3 rcu_nocbs=2-3 -- isolcpus=0\n",
        "etc/os-release": 'NAME="Test"\nPRETTY_NAME="Test Linux 1.0 (fake)"\nID=test\n',
        "proc/cpuinfo": cpuinfo(ncpu),
        f"{cpu}/online": f"0-{ncpu - 1}\n",
        f"{cpu}/isolated": "2-3\n",
        f"{cpu}/smt/control": "off\n",
        f"{cpu}/smt/active": "0\n",
        f"{cpu}/intel_pstate/no_turbo": "1\n",
        f"{cpu}/vulnerabilities/meltdown": "Not affected\n",
        f"{cpu}/vulnerabilities/spectre_v1": "Mitigation: usercopy/swapgs barriers and __user "
        "pointer sanitization\n",
        f"{cpu}/vulnerabilities/spectre_v2": "Mitigation: Enhanced / Automatic IBRS; IBPB: "
        "conditional; RSB filling; PBRSB-eIBRS: SW sequence; BHI: BHI_DIS_S\n",
        f"{cpu}/vulnerabilities/mds": "Not affected\n",
        "sys/devices/system/clocksource/clocksource0/current_clocksource": "tsc\n",
        "sys/devices/system/clocksource/clocksource0/available_clocksource": "tsc hpet acpi_pm \n",
        "sys/class/dmi/id/sys_vendor": "Dell Inc.\n",
        "sys/class/dmi/id/product_name": "OptiPlex 7070\n",
        "proc/self/cgroup": "0::/user.slice/bench.scope\n",
        "proc/1/cgroup": "0::/init.scope\n",
        "proc/self/mountinfo": MOUNTINFO,
        "proc/self/status": "Name:\tpython\nNoNewPrivs:\t0\nSeccomp:\t0\nSeccomp_filters:\t0\n",
        "sys/fs/cgroup/user.slice/bench.scope/cpu.max": "max 100000\n",
        "sys/fs/cgroup/user.slice/bench.scope/cpuset.cpus.effective": f"0-{ncpu - 1}\n",
        "proc/loadavg": "0.02 0.05 0.01 1/312 4242\n",
        "proc/meminfo": "MemTotal:       16314552 kB\nMemFree:        1000 kB\n",
    }
    for i in range(ncpu):
        files[f"{cpu}/cpu{i}/topology/thread_siblings_list"] = f"{i}\n"
        files[f"{cpu}/cpu{i}/topology/core_id"] = f"{i}\n"
        files[f"{cpu}/cpu{i}/topology/physical_package_id"] = "0\n"
        files[f"{cpu}/cpu{i}/cpufreq/scaling_governor"] = "performance\n"
        files[f"{cpu}/cpu{i}/cpufreq/scaling_driver"] = "intel_pstate\n"
        files[f"{cpu}/cpu{i}/cpufreq/scaling_cur_freq"] = "3200000\n"
        files[f"{cpu}/cpu{i}/cpufreq/scaling_min_freq"] = "800000\n"
        files[f"{cpu}/cpu{i}/cpufreq/scaling_max_freq"] = "4600000\n"
    return files


def tree(tmp_path: Path, changes: dict[str, str | bytes | None] | None = None) -> str:
    """The good tree with some files changed (None removes one); returns its root."""
    files = good_files()
    for rel, value in (changes or {}).items():
        if value is None:
            files.pop(rel, None)
        else:
            files[rel] = value
    return write_tree(tmp_path, files)


def codes(findings: list[Finding], severity: str | None = None) -> set[str]:
    return {f.code for f in findings if severity is None or f.severity == severity}


# ---- parsing ------------------------------------------------------------------------------


def test_parse_cpulist() -> None:
    assert parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpulist("") == []
    assert parse_cpulist("(null)") == []
    assert parse_cpulist(None) is None
    assert parse_cpulist("nohz,domain,2-3") == [2, 3]  # isolcpus flags are skipped
    assert parse_cpulist("0-7:2/4") == [0, 2, 4, 6]
    assert format_cpulist([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert format_cpulist([]) == "none"


def test_fields_of_good_tree(tmp_path: Path) -> None:
    e = capture(root=tree(tmp_path), probe_env=probe_env())
    assert e["kernel"]["release"] == "6.8.0-test"
    assert e["kernel"]["machine"] == "x86_64"
    assert e["kernel"]["cmdline"].startswith("BOOT_IMAGE=")
    assert e["hostname"] == "bench1"
    assert e["distribution"] == "Test Linux 1.0 (fake)"
    assert e["cpu"]["model"] == MODEL
    assert e["cpu"]["vendor"] == "GenuineIntel"
    assert e["cpu"]["logical"] == 4
    assert e["cpu"]["online"] == [0, 1, 2, 3]
    assert e["cpu"]["physical_cores"] == 4
    assert e["cpu"]["packages"] == 1
    assert e["cpu"]["smt"] is False
    assert e["tsc"] == {
        "constant_tsc": True,
        "nonstop_tsc": True,
        "tsc_reliable": False,
        "tsc_known_freq": True,
        "rdtscp": True,
    }
    assert e["virtualization"]["hypervisor_flag"] is False
    assert e["virtualization"]["vm"] is False
    assert e["virtualization"]["container"] is False
    assert e["cpufreq"]["governors"] == ["performance"]
    assert e["cpufreq"]["per_cpu"]["2"]["max_khz"] == 4600000
    assert e["cpufreq"]["turbo"] is False
    assert e["clocksource"] == {"current": "tsc", "available": ["tsc", "hpet", "acpi_pm"]}
    assert e["cgroup"]["version"] == 2
    assert e["cgroup"]["cpu_limit"] is None
    assert e["cgroup"]["cpuset"] == "0-3"
    # parameters after "--" belong to init, not the kernel
    assert e["isolation"]["isolcpus"] == "2-3"
    assert e["isolation"]["isolated"] == "2-3"
    assert e["load"] == {"1m": 0.02, "5m": 0.05, "15m": 0.01, "runnable": 1, "threads": 312}
    assert e["memory_total_bytes"] == 16314552 * 1024
    assert e["seccomp"] == {"mode": 0, "filters": 0, "no_new_privs": 0}
    assert e["cpu_busy"] is None and e["filesystem"] is None
    assert e["process"] == {"pid": 1, "uid": 0, "euid": 0} and e["schema"] == 2
    json.dumps(e)


def test_smt_topology_four_cpus_two_cores(tmp_path: Path) -> None:
    files = good_files()
    cpu = "sys/devices/system/cpu"
    for i in range(4):
        files[f"{cpu}/cpu{i}/topology/thread_siblings_list"] = "0,2\n" if i % 2 == 0 else "1-3:2\n"
        files[f"{cpu}/cpu{i}/topology/core_id"] = f"{i % 2}\n"
    files[f"{cpu}/smt/control"] = "on\n"
    files[f"{cpu}/smt/active"] = "1\n"
    e = capture(root=write_tree(tmp_path, files))
    assert e["cpu"]["logical"] == 4
    assert e["cpu"]["physical_cores"] == 2
    assert e["cpu"]["smt"] is True
    assert e["cpu"]["siblings"] == {"0": [0, 2], "1": [1, 3], "2": [0, 2], "3": [1, 3]}
    assert codes(check(e), "warning") == {"smt"}


def test_cpu_count_falls_back_to_core_ids(tmp_path: Path) -> None:
    files = good_files()
    for i in range(4):
        del files[f"sys/devices/system/cpu/cpu{i}/topology/thread_siblings_list"]
        files[f"sys/devices/system/cpu/cpu{i}/topology/core_id"] = f"{i // 2}\n"
    e = capture(root=write_tree(tmp_path, files))
    assert e["cpu"]["physical_cores"] == 2
    assert e["cpu"]["smt"] is False  # from smt/active = 0


def test_filesystem_is_the_probes_record(tmp_path: Path) -> None:
    root = tree(tmp_path)
    fs = capture(path="/mnt/my disk/data/run.bin", root=root, probe_env=probe_env(filesystem=XFS))
    none = {"statfs_magic": None, "device": None, "write_cache": None, "scheduler": None}
    assert fs["filesystem"] == {**XFS, **none, "rotational": None}
    # the lab never reads mountinfo for it: without the probe's record the filesystem is unknown
    assert capture(path="/scratch/f", root=root)["filesystem"]["fstype"] is None
    e = capture(path="/scratch/f", root=root, probe_env=probe_env(filesystem=TMPFS))
    assert "filesystem" in codes(check(e), "info")


def test_parse_mountinfo_optional_fields_and_junk() -> None:
    text = "36 35 98:0 /mnt1 /mnt/a\\011b rw shared:1 master:2 - ext3 /dev/x\\134y rw\ngarbage\n"
    (m,) = parse_mountinfo(text) or []
    assert m["root"] == "/mnt1"
    assert m["mount_point"] == "/mnt/a\tb"
    assert m["source"] == "/dev/x\\y"
    assert m["fstype"] == "ext3"


def test_vulnerabilities_and_costly_mitigations(tmp_path: Path) -> None:
    vuln = "sys/devices/system/cpu/vulnerabilities/"
    root = tree(
        tmp_path,
        {
            vuln + "meltdown": "Mitigation: PTI\n",
            vuln + "spectre_v2": "Mitigation: Retpolines; IBPB: conditional; IBRS_FW; STIBP: "
            "conditional; RSB filling; PBRSB-eIBRS: Not affected; BHI: Not affected\n",
            vuln + "mds": "Mitigation: Clear CPU buffers; SMT vulnerable\n",
        },
    )
    e = capture(root=root)
    assert e["mitigations"]["meltdown"] == "Mitigation: PTI"
    assert e["mitigations"]["spectre_v1"].startswith("Mitigation: usercopy")
    assert set(e["mitigations"]) == {"meltdown", "spectre_v1", "spectre_v2", "mds"}
    assert set(costly_mitigations(e["mitigations"])) == {"meltdown", "spectre_v2", "mds"}
    assert "mitigations" in codes(check(e), "warning")
    message = next(f.message for f in check(e) if f.code == "mitigations")
    assert "system calls" in message and "slower" in message


def test_cheap_mitigations_are_not_flagged() -> None:
    assert (
        costly_mitigations(
            {
                "spectre_v2": "Mitigation: Enhanced / Automatic IBRS; IBPB: conditional; "
                "PBRSB-eIBRS: SW sequence; BHI: Vulnerable",
                "retbleed": "Mitigation: Enhanced IBRS",
                "spec_rstack_overflow": "Mitigation: IBPB on VMEXIT only",
                "spectre_v1": "Mitigation: usercopy/swapgs barriers and __user pointer "
                "sanitization",
                "meltdown": "Not affected",
            }
        )
        == {}
    )
    assert set(
        costly_mitigations(
            {
                "spectre_v2": "Mitigation: Enhanced / Automatic IBRS; BHI: SW loop, KVM: SW loop",
                "retbleed": "Mitigation: untrained return thunk; SMT vulnerable",
                "spec_rstack_overflow": "Mitigation: Safe RET",
            }
        )
    ) == {"spectre_v2", "retbleed", "spec_rstack_overflow"}


def test_kernel_config_hz(tmp_path: Path) -> None:
    config = "CONFIG_HZ_1000=y\nCONFIG_HZ=1000\nCONFIG_PREEMPT_VOLUNTARY=y\n"
    e = capture(root=tree(tmp_path, {"proc/config.gz": gzip.compress(config.encode())}))
    assert e["kernel"]["config_hz"] == 1000
    assert e["kernel"]["preempt"] == "voluntary"
    assert e["kernel"]["config_source"] == "/proc/config.gz"


def test_kernel_config_from_boot(tmp_path: Path) -> None:
    e = capture(
        root=tree(tmp_path, {"boot/config-6.8.0-test": "CONFIG_HZ=250\n"}), probe_env=probe_env()
    )
    assert e["kernel"]["config_hz"] == 250
    assert e["kernel"]["config_source"] == "/boot/config-6.8.0-test"


# ---- missing and broken files -----------------------------------------------------------


def test_empty_tree_gives_none_everywhere(tmp_path: Path) -> None:
    e = capture(path="/some/file", root=str(tmp_path), sample_load=True, interval=0)
    json.dumps(e)
    assert e["kernel"]["release"] is None
    assert e["kernel"]["cmdline"] is None
    assert e["kernel"]["config_hz"] is None
    assert e["distribution"] is None
    assert e["cpu"]["model"] is None
    assert e["cpu"]["online"] is None
    assert e["cpu"]["smt"] is None
    assert e["cpufreq"]["governors"] is None
    assert e["cpufreq"]["turbo"] is None
    assert e["clocksource"] == {"current": None, "available": None}
    assert e["tsc"] is None
    assert e["virtualization"]["vm"] is None
    assert e["cgroup"] is None
    assert e["mitigations"] is None
    assert e["load"] is None
    assert e["memory_total_bytes"] is None
    assert e["cpu_busy"] is None
    assert e["filesystem"]["fstype"] is None
    assert e["hostname"] is None
    findings = check(e)  # nothing known, nothing to warn about
    assert codes(findings, "warning") == set()
    render(e, findings)
    assert compatible(e, e) == []


def test_garbage_files_do_not_raise(tmp_path: Path) -> None:
    cpu = "sys/devices/system/cpu"
    junk = "\x00\xff not a number ::: - -\n"
    files = good_files()
    for rel in list(files):
        files[rel] = junk
    files[f"{cpu}/cpu0/cpufreq/scaling_cur_freq"] = b"\xff\xfe\x00"
    files["proc/config.gz"] = b"not gzip"
    files["proc/stat"] = junk
    (tmp_path / "proc/self/cgroup").mkdir(parents=True)  # a directory where a file should be
    files.pop("proc/self/cgroup")
    e = capture(path="/x", root=write_tree(tmp_path, files), sample_load=True, interval=0)
    json.dumps(e)
    assert e["cgroup"] is None
    assert e["cpufreq"]["per_cpu"]["0"]["cur_khz"] is None
    assert e["load"] is None
    check(e)


def test_check_tolerates_partial_dicts() -> None:
    assert check({}) == []
    assert compatible({}, {"cpu": None}) == []
    render({"kernel": None}, [])


# ---- check ------------------------------------------------------------------------------


def test_all_good_tree_has_no_warnings(tmp_path: Path) -> None:
    e = capture(path="/home/u/data", root=tree(tmp_path), probe_env=probe_env(filesystem=ROOT_FS))
    assert [f for f in check(e) if f.severity == "warning"] == []


def test_governor_powersave_warns(tmp_path: Path) -> None:
    changes: dict[str, str | bytes | None] = {
        f"sys/devices/system/cpu/cpu{i}/cpufreq/scaling_governor": "powersave\n" for i in (1, 2)
    }
    e = capture(root=tree(tmp_path, changes))
    assert e["cpufreq"]["governors"] == ["performance", "powersave"]
    (f,) = [f for f in check(e) if f.code == "governor"]
    assert f.severity == "warning"
    assert "powersave" in f.message and "1-2" in f.message
    assert "performance" in f.advice


def test_turbo_and_boost(tmp_path: Path) -> None:
    e = capture(root=tree(tmp_path, {"sys/devices/system/cpu/intel_pstate/no_turbo": "0"}))
    assert e["cpufreq"]["turbo"] is True
    assert "turbo" in codes(check(e), "warning")


def test_boost_file_used_without_intel_pstate(tmp_path: Path) -> None:
    e = capture(
        root=tree(
            tmp_path,
            {
                "sys/devices/system/cpu/intel_pstate/no_turbo": None,
                "sys/devices/system/cpu/cpufreq/boost": "1\n",
            },
        )
    )
    assert e["cpufreq"]["turbo"] is True
    (f,) = [f for f in check(e) if f.code == "turbo"]
    assert "cpufreq/boost" in f.advice


def test_per_policy_boost(tmp_path: Path) -> None:
    changes: dict[str, str | bytes | None] = {
        "sys/devices/system/cpu/intel_pstate/no_turbo": None,
        "sys/devices/system/cpu/cpu3/cpufreq/boost": "1\n",
    }
    e = capture(root=tree(tmp_path, changes))
    assert e["cpufreq"]["turbo"] is True
    assert "turbo" in codes(check(e), "warning")


@pytest.mark.parametrize(
    ("leaf", "parent", "quota", "limit", "where"),
    [
        ("50000 100000", None, 50000, 0.5, "/sys/fs/cgroup/user.slice/bench.scope"),
        # a parent's quota binds its children too, and the tightest one counts
        ("200000 100000", "50000 100000", 50000, 0.5, "/sys/fs/cgroup/user.slice"),
        ("150000 100000", "max 100000", 150000, 1.5, "/sys/fs/cgroup/user.slice/bench.scope"),
    ],
)
def test_cgroup_v2_quota_warns(
    tmp_path: Path, leaf: str, parent: str | None, quota: int, limit: float, where: str
) -> None:
    root = tree(
        tmp_path,
        {
            "sys/fs/cgroup/user.slice/bench.scope/cpu.max": leaf + "\n",
            "sys/fs/cgroup/user.slice/cpu.max": parent,
            "sys/fs/cgroup/user.slice/bench.scope/cpu.stat": "usage_usec 5\nnr_throttled 7\n",
        },
    )
    e = capture(root=root)
    assert e["cgroup"]["version"] == 2
    assert e["cgroup"]["path"] == "/user.slice/bench.scope"
    assert e["cgroup"]["cpu_quota_us"] == quota
    assert e["cgroup"]["cpu_period_us"] == 100000
    assert e["cgroup"]["cpu_limit"] == limit
    assert e["cgroup"]["limit_at"] == where
    assert e["cgroup"]["nr_throttled"] == 7
    (f,) = [f for f in check(e) if f.code == "cgroup-quota"]
    assert f.severity == "warning" and f"{limit:g} CPUs" in f.message


def test_cgroup_v1_quota_in_container_namespace(tmp_path: Path) -> None:
    mountinfo = (
        "28 1 8:1 / / rw - overlay overlay rw,lowerdir=/a,upperdir=/b\n"
        "50 28 0:50 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup rw,cpu,cpuacct\n"
        "51 28 0:51 /docker/abc /sys/fs/cgroup/cpuset ro - cgroup cgroup rw,cpuset\n"
    )
    root = tree(
        tmp_path,
        {
            "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "200000\n",
            "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
            "sys/fs/cgroup/cpuset/cpuset.effective_cpus": "0-1\n",
            "proc/self/cgroup": "5:cpuset:/docker/abc\n4:cpu,cpuacct:/docker/abc\n"
            "1:name=systemd:/x\n",
            "proc/self/mountinfo": mountinfo,
            "proc/1/cgroup": "4:cpu,cpuacct:/docker/abc\n",
        },
    )
    e = capture(root=root)
    assert e["cgroup"]["version"] == 1
    assert e["cgroup"]["cpu_limit"] == 2.0
    assert e["cgroup"]["cpuset"] == "0-1"
    assert e["virtualization"]["container"] is True
    hints = e["virtualization"]["container_hints"]
    assert "/proc/1/cgroup mentions docker" in hints
    assert "root filesystem is overlay" in hints
    assert {"cgroup-quota", "container"} <= codes(check(e), "warning")


def test_hypervisor_flag_warns(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {
            "proc/cpuinfo": cpuinfo(4, flags=FLAGS + " hypervisor"),
            "sys/class/dmi/id/sys_vendor": "QEMU\n",
            "sys/class/dmi/id/product_name": "Standard PC (Q35 + ICH9, 2009)\n",
        },
    )
    e = capture(root=root)
    assert e["virtualization"]["vm"] is True
    assert e["virtualization"]["hypervisor_flag"] is True
    assert e["virtualization"]["kind"] == "qemu"
    (f,) = [f for f in check(e) if f.code == "vm"]
    assert f.severity == "warning" and "TSC" in f.message


def test_wsl_and_dockerenv(tmp_path: Path) -> None:
    root = tree(tmp_path, {".dockerenv": ""})
    e = capture(root=root, probe_env=probe_env(release="5.15.153.1-microsoft-standard-WSL2"))
    assert e["virtualization"]["wsl"] is True
    assert e["virtualization"]["vm"] is True
    assert e["virtualization"]["container_hints"] == ["/.dockerenv"]
    assert {"wsl", "vm", "container"} <= codes(check(e), "warning")


def test_load_clocksource_tsc_few_cpus_seccomp(tmp_path: Path) -> None:
    files = good_files(ncpu=1)
    files["proc/loadavg"] = "0.90 0.50 0.20 3/300 1\n"
    files["proc/cpuinfo"] = cpuinfo(1, flags="fpu tsc")
    files["proc/self/status"] = "Seccomp:\t2\nSeccomp_filters:\t1\n"
    files["sys/devices/system/cpu/isolated"] = "\n"
    files["proc/cmdline"] = "root=/dev/sda1 mitigations=off\n"
    findings = check(
        capture(root=write_tree(tmp_path, files), probe_env=probe_env(clocksource="hpet"))
    )
    assert codes(findings, "warning") == {
        "load",
        "clocksource",
        "tsc-not-invariant",
        "few-cpus",
        "seccomp",
    }
    assert {"no-isolation", "mitigations-off"} <= codes(findings, "info")
    load = next(f for f in findings if f.code == "load")
    assert "0.90" in load.message
    clock = next(f for f in findings if f.code == "clocksource")
    assert "echo tsc" in clock.advice


def test_deep_idle_states_are_noted(tmp_path: Path) -> None:
    d = "sys/devices/system/cpu/cpu0/cpuidle/"
    root = tree(
        tmp_path,
        {
            d + "state0/name": "POLL",
            d + "state0/latency": "0",
            d + "state1/name": "C1",
            d + "state1/latency": "2",
            d + "state2/name": "C6",
            d + "state2/latency": "133",
            d + "state3/name": "C10",
            d + "state3/latency": "890",
            d + "state3/disable": "1",
        },
    )
    e = capture(root=root)
    assert len(e["cpuidle"]["states"]) == 4
    (f,) = [f for f in check(e) if f.code == "idle-states"]
    assert "C6" in f.message and "133" in f.message


# ---- busy CPUs ----------------------------------------------------------------------------

STAT0 = "cpu  0 0 0 0 0 0 0 0\ncpu0 100 0 0 900 0 0 0 0\ncpu1 100 0 0 900 0 0 0 0\n" + (
    "cpu2 100 0 0 900 0 0 0 0\ncpu3 100 0 0 900 0 0 0 0\nintr 1 2 3\n"
)
# 20 ticks each; cpu2 (sibling of cpu0) busy 10 of them, cpu1 steals 2
STAT1 = "cpu  0 0 0 0 0 0 0 0\ncpu0 101 0 0 919 0 0 0 0\ncpu1 100 0 0 918 0 0 0 2\n" + (
    "cpu2 105 0 5 910 0 0 0 0\ncpu3 100 0 0 920 0 0 0 0\nintr 1 2 3\n"
)


def test_cpu_busy_samples_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_tree(tmp_path, {"proc/stat": STAT0})
    slept = []

    def fake_sleep(seconds: float) -> None:
        slept.append(seconds)
        (tmp_path / "proc/stat").write_text(STAT1)

    monkeypatch.setattr("latscope.env.snapshot.time.sleep", fake_sleep)
    assert cpu_busy(root, 0.2) == {"0": 0.05, "1": 0.1, "2": 0.5, "3": 0.0}
    assert slept == [0.2]
    assert cpu_busy(str(tmp_path / "nowhere")) is None


def test_smt_sibling_busy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = good_files()
    for i in range(4):
        sib = "0,2" if i % 2 == 0 else "1,3"
        files[f"sys/devices/system/cpu/cpu{i}/topology/thread_siblings_list"] = sib
    files["proc/stat"] = STAT0
    root = write_tree(tmp_path, files)
    monkeypatch.setattr(
        "latscope.env.snapshot.time.sleep", lambda s: (tmp_path / "proc/stat").write_text(STAT1)
    )
    e = capture(root=root, sample_load=True)
    assert e["cpu_busy"]["2"] == 0.5
    findings = check(e)
    assert {"smt", "smt-sibling-busy", "cpus-busy"} <= codes(findings, "warning")
    f = next(f for f in findings if f.code == "smt-sibling-busy")
    assert "CPU 0 (sibling 2 is 50% busy)" in f.message
    assert "1,3" in f.advice  # the quiet core


# ---- render and compatible --------------------------------------------------------------


def test_render_shows_fields_and_advice(tmp_path: Path) -> None:
    from rich.console import Console

    e = capture(
        path="/mnt/my disk/f",
        root=tree(tmp_path, {"sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": "powersave"}),
        probe_env=probe_env(filesystem=XFS),
    )
    out = io.StringIO()
    Console(file=out, width=200).print(render(e, check(e)))
    text = out.getvalue()
    assert MODEL in text and "6.8.0-test" in text and "xfs" in text
    assert "governor" in text and "cpupower frequency-set -g performance" in text
    out = io.StringIO()
    Console(file=out, width=200).print(render(e))
    assert "Findings" not in out.getvalue()


def test_compatible(tmp_path: Path) -> None:
    a = capture(
        path="/home/u/f", root=tree(tmp_path / "a"), probe_env=probe_env(filesystem=ROOT_FS)
    )
    assert compatible(a, a) == []
    b = capture(
        path="/scratch/f",
        root=tree(
            tmp_path / "b",
            {
                "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": "powersave",
                "proc/cpuinfo": cpuinfo(4, model="AMD EPYC 7763", flags=FLAGS + " hypervisor"),
            },
        ),
        probe_env=probe_env("6.9.1", "AMD EPYC 7763", "hpet", TMPFS),
    )
    diffs = compatible(a, b)
    text = " ".join(diffs)
    assert len(diffs) == 6, diffs
    for word in ("CPU", "kernel", "clock source", "virtualisation", "governor", "filesystem"):
        assert f"Different {word}" in text
    assert "6.8.0-test vs 6.9.1" in text
    # a value unknown on one side is not a difference
    c = json.loads(json.dumps(a))
    c["clocksource"]["current"] = None
    assert compatible(a, c) == []


# ---- this machine -------------------------------------------------------------------------


def test_capture_real_machine() -> None:
    e = capture(path=".", sample_load=True, interval=0.05)
    back = json.loads(json.dumps(e))
    assert back["kernel"]["release"]
    assert back["kernel"]["machine"]
    assert back["cpu"]["logical"] >= 1
    assert "model" in back["cpu"]
    assert back["filesystem"]["mount_point"]
    assert all(isinstance(f, Finding) for f in check(back))


def test_vm_without_cpufreq_gets_no_frequency_advice(tmp_path: Path) -> None:
    """A guest without scaling_governor controls no CPU frequency: no governor, turbo,
    cooling or power advice, but what applies (host noise, repeat runs, pin)."""
    files = good_files()
    files = {k: v for k, v in files.items() if "/cpufreq/" not in k and "intel_pstate" not in k}
    files["proc/cpuinfo"] = cpuinfo(4, flags=FLAGS + " hypervisor")
    files["sys/devices/system/clocksource/clocksource0/available_clocksource"] = (
        "kvm-clock tsc acpi_pm\n"
    )
    e = capture(root=write_tree(tmp_path, files), probe_env=probe_env(clocksource="kvm-clock"))
    assert frequency_control(e) is False
    findings = check(e)
    text = " ".join(f"{f.message} {f.advice}" for f in findings if f.code != "frequency-host")
    assert not {"governor", "turbo", "frequency-unknown"} & codes(findings)
    assert "cpupower" not in text and "cooling" not in text
    (host,) = [f for f in findings if f.code == "frequency-host"]
    assert "host" in host.message and "Repeat runs" in host.advice and "pin" in host.advice
    (clock,) = [f for f in findings if f.code == "clock"]
    assert "kvm-clock" in clock.message


def test_bare_metal_with_governor_has_frequency_control(tmp_path: Path) -> None:
    e = capture(root=tree(tmp_path))
    assert frequency_control(e) is True
    assert "frequency-host" not in codes(check(e))
    assert frequency_control({}) is None


def test_clock_source_and_probe_clock_are_named(tmp_path: Path) -> None:
    from rich.console import Console

    e = capture(root=tree(tmp_path), probe_env=probe_env())
    assert e["clocksource"]["current"] == "tsc" and e["probe_clock"] is None  # fake root
    e["probe_clock"] = {"name": "tsc", "description": "time-stamp counter"}
    (clock,) = [f for f in check(e) if f.code == "clock"]
    assert "Kernel clock source: tsc" in clock.message and "probe times with tsc" in clock.message
    out = io.StringIO()
    Console(file=out, width=200).print(render(e, check(e)))
    text = out.getvalue()
    assert "Clock source" in text and "Probe clock" in text and "tsc (default" in text


# ---- the probe's record: one environment, one schema ------------------------------------

# Where the probe's facts were recorded before the schema was shared: the flat header names,
# and the file benchmark's filesystem in "bench".
OLD_NAMES = {"cpu_model", "cpus_online", "sysname", "release", "version", "machine", "pid"}


def paths(d: Any, prefix: str = "") -> set[str]:
    """Every key path of a nested dict ("cpu.model")."""
    out: set[str] = set()
    if isinstance(d, dict):
        for k, v in d.items():
            out.add(prefix + k)
            out |= paths(v, prefix + k + ".")
    return out


def test_a_run_keeps_each_probe_fact_once(tmp_path: Path) -> None:
    from latscope.env import PROBE_FACTS
    from latscope.measure.runner import measure

    d = tmp_path / "target"
    d.mkdir()
    run = measure("file", {"dir": str(d)}, n=20, warmup=1, store=tmp_path / "store")
    header, stored = run.meta["env"], run.meta["run"]["env"]
    assert stored["schema"] == header["schema"] == 2 and run.env == stored
    # the probe's facts: in run.json as the probe recorded them, under one name each
    for section, fields in PROBE_FACTS.items():
        if fields is None:
            assert stored[section] == header[section]
            continue
        for f in fields:
            assert stored[section][f] == header[section][f], (section, f)
    assert not OLD_NAMES & set(stored) and not OLD_NAMES & set(header)
    assert isinstance(stored["clocksource"], dict) and stored["clocksource"]["current"]
    assert stored["filesystem"]["path"] == str(d.resolve()) and stored["filesystem"]["fstype"]
    assert "filesystem" not in run.meta["bench"]  # recorded once, in the environment
    leaves = {p.rsplit(".", 1)[-1] for p in paths(stored)}
    assert not {"cpu_model", "cpus_online", "mountpoint"} & leaves
    # the lab's part beside it
    assert stored["kernel"]["cmdline"] is not None and stored["load"] is not None
    assert "available" in stored["clocksource"] and "logical" in stored["cpu"]
    assert compatible(stored, stored) == []


def test_a_sample_file_alone_has_its_environment(probe: str, tmp_path: Path) -> None:
    """A sample file from another machine (no run.json): its environment is the probe's
    record, in the schema; so is an older probe's flat record."""
    from latscope import samples
    from latscope.record import Run

    out = tmp_path / "elsewhere.lss"
    r = run_probe(probe, "file", "-p", f"dir={tmp_path}", "-n", "20", "-o", str(out))
    assert r.returncode == 0, r.stderr
    env = Run(out).env
    assert env is not None and env["schema"] == 2
    assert env["kernel"]["release"] and env["kernel"]["machine"] and env["cpu"]["model"]
    assert env["clocksource"]["current"] and env["hostname"]
    assert env["filesystem"]["mount_point"] and env["filesystem"]["fstype"]
    assert compatible(env, env) == [] and render(env) is not None

    old = samples.load(out).header
    old["env"] = {
        "sysname": "Linux",
        "release": "5.10.0",
        "machine": "aarch64",
        "hostname": "far",
        "cpu_model": "Old CPU",
        "cpus_online": 8,
        "clocksource": "arch_sys_counter",
        "pid": 7,
        "uid": 0,
        "euid": 0,
    }
    old["bench"]["filesystem"] = {"type": "xfs", "source": "/dev/x", "mountpoint": "/data"}
    sf = samples.load(out)
    p = samples.write(tmp_path / "old.lss", old, {c: sf.ticks[c] for c in sf.ticks})
    env_old = Run(p).env
    assert env_old is not None
    assert env_old["kernel"]["release"] == "5.10.0" and env_old["cpu"]["model"] == "Old CPU"
    assert env_old["cpu"]["online_count"] == 8 and env_old["hostname"] == "far"
    assert env_old["clocksource"]["current"] == "arch_sys_counter"
    assert env_old["filesystem"]["fstype"] == "xfs"
    assert env_old["filesystem"]["mount_point"] == "/data"
    text = " ".join(compatible(env, env_old))
    for word in ("CPU", "architecture", "kernel", "clock source", "filesystem"):
        assert f"Different {word}" in text


def test_runs_kept_before_the_schema_was_shared_still_compare() -> None:
    """run.json of an older latscope: the lab's capture (schema 1), whose names the schema
    kept; it is read as it is and compares with a new one."""
    from latscope.env import of_run

    old = {"schema": 1, "kernel": {"release": "6.1"}, "cpu": {"model": "A"}, "hostname": "h"}
    new = {"schema": 2, "kernel": {"release": "6.2"}, "cpu": {"model": "A"}, "hostname": "h"}
    assert of_run({"env": old}, {"env": {"cpu_model": "ignored"}}) == old
    assert compatible(old, new) == ["Different kernel: 6.1 vs 6.2."]
    assert of_run({"env": None}, {}) is None  # an imported CSV records none

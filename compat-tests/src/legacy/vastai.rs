//! Mirror of swactor's vast.ai monitoring records (`diagnostics/vastai/record.rs`).
//!
//! Every optional payload field is left out when absent; the body is internally tagged on `t`,
//! and the lifecycle body nests a second internal tag, `event`.

use arbitrary::{Arbitrary, Result, Unstructured};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ms_epoch, opt_finite_f64};

/// swactor `Source`: which producer wrote the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Arbitrary)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The orchestrator-side REST poller.
    External,
    /// The in-container sampler.
    InVm,
}

/// swactor `VastaiNodeRef`: which rented node the record is about.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, Arbitrary)]
pub struct VastaiNodeRef {
    /// Contract id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract_id: Option<u64>,
    /// Stage slot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage_index: Option<u32>,
    /// The vast `--label`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

fn version(u: &mut Unstructured<'_>) -> Result<u32> {
    Ok(if u.ratio(7u8, 8u8)? {
        1
    } else {
        u32::arbitrary(u)?
    })
}

/// swactor `VastaiRecord`: one observation.
#[derive(Debug, Clone, Serialize, Deserialize, Arbitrary)]
pub struct VastaiRecord {
    /// Schema version (1).
    #[arbitrary(with = version)]
    pub v: u32,
    /// The node the record is about.
    pub vastai_node: VastaiNodeRef,
    /// The producer.
    pub source: Source,
    /// Producer-local sequence.
    pub seq: u64,
    /// Producer wall clock.
    #[arbitrary(with = ms_epoch)]
    pub wall_ms: u64,
    /// The payload.
    pub body: VastaiBody,
}

/// swactor `VastaiBody`: internally tagged on `t`, snake_case tags.
#[derive(Debug, Clone, Serialize, Deserialize, Arbitrary)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum VastaiBody {
    /// External instance view.
    Instance(InstanceObservation),
    /// In-VM host metrics sample.
    HostSample(HostSample),
    /// A batch of log lines.
    Logs(LogBatch),
    /// Lifecycle marker.
    Lifecycle(LifecycleEvent),
}

fn raw(u: &mut Unstructured<'_>) -> Result<Value> {
    // The verbatim vast JSON of the instance, or nothing.
    Ok(if bool::arbitrary(u)? {
        super::any_json_object(u)?
    } else {
        Value::Null
    })
}

/// swactor `InstanceObservation`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Arbitrary)]
pub struct InstanceObservation {
    /// Contract/instance id.
    pub id: u64,
    /// GPU model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_name: Option<String>,
    /// GPU memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub gpu_ram: Option<f64>,
    /// GPU count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_gpus: Option<u32>,
    /// Location.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub geolocation: Option<String>,
    /// Host id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_id: Option<u64>,
    /// Machine id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_id: Option<u64>,
    /// Price per hour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub dph_total: Option<f64>,
    /// Accumulated cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub accumulated_cost: Option<f64>,
    /// Start time, epoch seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub start_date: Option<f64>,
    /// Actual status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual_status: Option<String>,
    /// Intended status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intended_status: Option<String>,
    /// Status message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_msg: Option<String>,
    /// Disk usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub disk_usage: Option<f64>,
    /// Disk space.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub disk_space: Option<f64>,
    /// Public IP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_ipaddr: Option<String>,
    /// SSH host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_host: Option<String>,
    /// SSH port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_port: Option<u16>,
    /// GPU utilization.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub gpu_util: Option<f64>,
    /// GPU temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub gpu_temp: Option<f64>,
    /// CPU utilization.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub cpu_util: Option<f64>,
    /// Memory usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub mem_usage: Option<f64>,
    /// Upload bandwidth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub inet_up: Option<f64>,
    /// Download bandwidth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub inet_down: Option<f64>,
    /// The verbatim vast JSON, left out when null.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    #[arbitrary(with = raw)]
    pub raw: Value,
}

/// swactor `HostSample`: one in-VM metrics tick.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Arbitrary)]
pub struct HostSample {
    /// Per-GPU samples.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<GpuSample>,
    /// CPU sample.
    pub cpu: CpuSample,
    /// Memory sample.
    pub mem: MemSample,
    /// Per-disk samples.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disk: Vec<DiskSample>,
    /// Per-interface samples.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub net: Vec<NetSample>,
    /// cgroup limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<CgroupSample>,
}

/// swactor `GpuSample`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Arbitrary)]
pub struct GpuSample {
    /// GPU index.
    pub index: u32,
    /// Model name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Utilization.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub util_pct: Option<f64>,
    /// Memory used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub mem_used_mb: Option<f64>,
    /// Memory total.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub mem_total_mb: Option<f64>,
    /// Temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub temp_c: Option<f64>,
    /// Power draw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub power_w: Option<f64>,
    /// Power limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub power_limit_w: Option<f64>,
}

/// swactor `CpuSample`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Arbitrary)]
pub struct CpuSample {
    /// Utilization since the previous tick.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub util_pct: Option<f64>,
    /// 1-minute load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub load1: Option<f64>,
    /// 5-minute load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub load5: Option<f64>,
    /// 15-minute load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub load15: Option<f64>,
    /// CPU count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_cpus: Option<u32>,
}

/// swactor `MemSample`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Arbitrary)]
pub struct MemSample {
    /// Total memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_kb: Option<u64>,
    /// Available memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_kb: Option<u64>,
    /// Used memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_kb: Option<u64>,
    /// Total swap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap_total_kb: Option<u64>,
    /// Free swap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap_free_kb: Option<u64>,
}

/// swactor `DiskSample`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Arbitrary)]
pub struct DiskSample {
    /// Device name.
    pub device: String,
    /// Read throughput.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub read_bytes_per_s: Option<f64>,
    /// Write throughput.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub write_bytes_per_s: Option<f64>,
    /// Filesystem size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs_total_bytes: Option<u64>,
    /// Filesystem used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs_used_bytes: Option<u64>,
}

/// swactor `NetSample`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Arbitrary)]
pub struct NetSample {
    /// Interface name.
    pub iface: String,
    /// Receive rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub rx_bytes_per_s: Option<f64>,
    /// Send rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub tx_bytes_per_s: Option<f64>,
    /// Received bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_bytes_total: Option<u64>,
    /// Sent bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_bytes_total: Option<u64>,
}

/// swactor `CgroupSample`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, Arbitrary)]
pub struct CgroupSample {
    /// Memory limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_limit_bytes: Option<u64>,
    /// Memory in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_current_bytes: Option<u64>,
    /// CPU quota in cores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arbitrary(with = opt_finite_f64)]
    pub cpu_quota_cores: Option<f64>,
}

/// swactor `LogStream`: snake_case strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Arbitrary)]
#[serde(rename_all = "snake_case")]
pub enum LogStream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
    /// vast's `request_logs`.
    VastRequestLogs,
}

/// swactor `LogBatch`: `lines` always written.
#[derive(Debug, Clone, Serialize, Deserialize, Arbitrary)]
pub struct LogBatch {
    /// Which stream.
    pub stream: LogStream,
    /// The lines.
    pub lines: Vec<LogLine>,
}

/// swactor `LogLine`.
#[derive(Debug, Clone, Serialize, Deserialize, Arbitrary)]
pub struct LogLine {
    /// Observation time.
    #[arbitrary(with = ms_epoch)]
    pub wall_ms: u64,
    /// Line number within the stream.
    pub line: u64,
    /// Line text.
    pub text: String,
}

/// swactor `LifecycleEvent`: internally tagged on `event`, snake_case tags.
#[derive(Debug, Clone, Serialize, Deserialize, Arbitrary)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum LifecycleEvent {
    /// A deploy began.
    DeployStart {
        /// Planned stage count.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        num_stages: Option<u32>,
    },
    /// A contract was leased.
    ContractLeased {
        /// The contract.
        contract_id: u64,
        /// The offer it came from.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        offer_id: Option<u64>,
    },
    /// A contract is being torn down.
    Teardown {
        /// The contract.
        contract_id: u64,
        /// Why.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

//! Snapshots of the members: the identity a snapshot embeds and every block of the body (iroh,
//! SWIM, host, probes, subprocesses, app, actors) as a node's state holds it at the capture.

use diagwire::v1::*;

use crate::Generation;
use crate::oldest::oldest_body;
use crate::play::*;
use crate::world::*;

impl Run<'_> {
    pub(crate) fn identity(&self, n: usize) -> Identity {
        let s = &self.specs[n];
        let rental = s.rental.as_ref();
        let mut identity = Identity::new(
            s.hex.clone(),
            s.short(),
            s.role,
            self.run_id(),
            s.wall(s.boot),
            0,
        );
        identity.stage_index = s.stage;
        identity.stage_count = s.stage.map(|_| 3);
        identity.vastai_contract_id = rental
            .filter(|r| r.forwarded)
            .map(|r| r.contract.to_owned());
        identity.host_ip_public = rental.map(|r| r.ip.to_owned());
        identity.host_country = rental.map(|r| r.country.to_owned());
        identity.datacenter_id = rental.map(|r| r.datacenter.to_owned());
        identity.hostname = Some(s.hostname.to_owned());
        identity.container_id = rental.map(|r| r.contract.to_owned());
        identity.binary_version = Some(BINARY_VERSION.to_owned());
        identity.git_sha = Some(GIT_SHA.to_owned());
        identity.iroh_version = Some(IROH_VERSION.to_owned());
        identity.home_relay_url_at_boot = s.is_stage().then(|| RELAY_URL.to_owned());
        if n == RELAY {
            identity.host_ip_public = Some("203.0.113.200".to_owned());
            identity.host_country = Some("DE".to_owned());
            identity.datacenter_id = Some("fsn1-dc14".to_owned());
        }
        if self.generation == Generation::Current {
            // Host-provider context (contract 1.1.0): what the node derived from its environment.
            let provider = match (n, rental) {
                (RELAY, _) => Some((
                    HostProvider::Other("hetzner".to_owned()),
                    Some("cx22-4471209"),
                )),
                (_, Some(_)) => Some((HostProvider::Vastai, None)),
                (_, None) => Some((HostProvider::Local, None)),
            };
            if let Some((provider, contract)) = provider {
                identity.host_provider = Some(provider);
                identity.host_provider_source = Some(ValueSource::Derived);
                identity.provider_contract_id = contract.map(str::to_owned);
                identity.provider_contract_id_source = contract.map(|_| ValueSource::Derived);
            }
        }
        identity
    }

    /// Node `n`'s snapshot at true time `t`.
    pub(crate) fn capture(&mut self, n: usize, t: u64, trigger: SnapshotTrigger) -> Snapshot {
        if n == RELAY {
            return self.capture_relay(t, trigger);
        }
        let generation = self.generation;
        let run_id = self.run_id();
        let s = &self.specs[n];
        let w = s.wall(t);
        let identity = self.identity(n);
        let node = &mut self.nodes[n];
        let scrape = |node: &mut NodeState, lo: u64, hi: u64| w - node.rng.range(lo, hi);
        let mut known: Vec<usize> = node.peers.keys().copied().collect();
        known.sort_by(|a, b| self.specs[*a].hex.0.cmp(&self.specs[*b].hex.0));

        let reachability = known
            .iter()
            .map(|m| {
                let p = &node.peers[m];
                let mut r = PeerReachability::new(
                    self.specs[*m].hex.clone(),
                    p.opinion.clone().unwrap_or(PeerState::Unknown),
                    p.history.clone(),
                );
                r.last_inbound_packet_at_ms = p.last_inbound;
                r.last_outbound_success_at_ms = p.last_outbound_ok;
                r.last_dial_started_at_ms = p.dial_started;
                r.last_dial_outcome = p.dial_outcome.clone();
                r.last_dial_duration_ms = p.dial_duration;
                r.current_swim_opinion_since_ms = p.since;
                r.metadata_version_seen = p.metadata_seen;
                r
            })
            .collect();

        let iroh_peers = known
            .iter()
            .map(|m| {
                let p = &node.peers[m];
                let peer_spec = &self.specs[*m];
                let relay_active = p.conn == Some(ConnType::Relay);
                let direct_addr = match &peer_spec.rental {
                    Some(r) => format!("{}:41641", r.ip),
                    None => "192.168.1.23:41641".to_owned(),
                };
                let usage = |active: bool| {
                    if active {
                        AddrUsage::Active
                    } else {
                        AddrUsage::Inactive
                    }
                };
                let mut peer = IrohPeer::new(peer_spec.hex.clone());
                peer.conn_type = p.conn.clone();
                peer.conn_type_source = p.conn.as_ref().map(|_| ValueSource::Derived);
                if p.conn.is_some() {
                    peer.direct_addresses = vec![TransportAddr::new(
                        direct_addr,
                        usage(p.conn == Some(ConnType::Direct)),
                    )];
                    peer.relay_urls = vec![TransportAddr::new(RELAY_URL, usage(relay_active))];
                }
                peer
            })
            .collect::<Vec<_>>();
        let direct = node
            .peers
            .values()
            .filter(|p| p.conn == Some(ConnType::Direct))
            .count();
        let relayed = node
            .peers
            .values()
            .filter(|p| p.conn == Some(ConnType::Relay))
            .count();
        let age = t.saturating_sub(s.boot);
        let counter = |group: &str, name: &str, value: u64| {
            MetricSample::new(group, name, MetricValue::Counter(value))
        };
        let gauge = |group: &str, name: &str, value: i64| {
            MetricSample::new(group, name, MetricValue::Gauge(value))
        };
        let punches = node
            .peers
            .values()
            .filter(|p| p.conn == Some(ConnType::Direct))
            .count() as u64;
        let mut metrics = vec![
            counter(
                "magicsock",
                "send_relay",
                age * (relayed as u64 * 7 + 1) / 1_000,
            ),
            gauge("magicsock", "num_direct_conns", direct as i64),
            gauge("magicsock", "num_relay_conns", relayed as i64),
        ];
        if punches > 0 {
            metrics.push(MetricSample::new(
                "magicsock",
                "holepunch_rtt_ms",
                MetricValue::Histogram(Histogram::new(punches, punches as f64 * 37.25 + 4.5)),
            ));
        }
        let connection_cache = known
            .iter()
            .filter(|m| node.peers[m].generation > 0)
            .map(|m| {
                let p = &node.peers[m];
                let mut cache = ConnectionCache::new(self.specs[*m].hex.clone(), p.generation);
                cache.created_at_ms = p.created;
                cache.last_successful_send_at_ms = p.last_send;
                cache.last_failure_at_ms = p.failure_at;
                cache.last_failure_reason = p.failure_reason.clone();
                cache.observed_conn_type_at_last_use = p.conn_at_last_use.clone();
                cache
            })
            .collect();
        // The node's transport cannot report the relay tunnel's status (`RelayTunnel.status` is
        // among its API gaps), so the snapshot says `unknown` with a derived source; the relay
        // session events carry what the node saw.
        let mut relay_session =
            RelaySession::new(RelaySessionStatus::Unknown, ValueSource::Derived);
        relay_session.relay_url = Some(RELAY_URL.to_owned());
        let mut iroh = IrohState::new();
        iroh.home_relay_url = if n == ORCH {
            node.home_relay.clone()
        } else {
            Some(RELAY_URL.to_owned())
        };
        iroh.peers = iroh_peers;
        iroh.metrics = metrics;
        iroh.connection_cache = connection_cache;
        iroh.api_gaps = all_gaps();
        iroh.iroh_version = Some(IROH_VERSION.to_owned());
        iroh.relay_session = Some(relay_session);
        iroh.scraped_at_ms = scrape(node, 8, 20);

        let config = SWIM.config();
        let mut swim = SwimState::new(config, s.hex.clone(), 1, 1);
        swim.peers = known
            .iter()
            .filter(|m| node.peers[m].opinion.is_some())
            .map(|m| {
                let p = &node.peers[m];
                let state = p.opinion.clone().unwrap_or(PeerState::Unknown);
                let mut peer = SwimPeer::new(self.specs[*m].hex.clone(), state, 1);
                peer.last_ping_sent_at_ms = p.ping_sent;
                peer.last_ack_received_at_ms = p.ack_received;
                peer.last_ping_received_at_ms = p.ping_received;
                peer.suspect_started_at_ms = p.suspect_since;
                peer.metadata_version_seen = p.metadata_seen;
                peer
            })
            .collect();
        swim.recent_messages = node.recent.iter().cloned().collect();
        swim.scraped_at_ms = scrape(node, 4, 7);

        let host = host_state(s, n, t, scrape(node, 20, 45));
        let mut probes = ProbeState::new();
        probes.probes = node
            .probes
            .iter()
            .map(|p| {
                let mut probe = Probe::new(
                    p.target,
                    p.kind.clone(),
                    p.last_outcome.clone(),
                    p.attempts,
                    p.successes,
                );
                probe.resolved_addr = Some(p.addr.to_owned());
                probe.last_attempted_at_ms = p.last_attempted;
                probe.last_rtt_ms = p.last_rtt;
                probe.last_error = p.last_error.clone();
                if generation == Generation::Current {
                    let (port, relay) = match p.kind {
                        ProbeKind::UdpRelay => (3478, Some(RELAY_URL.to_owned())),
                        _ => (7777, None),
                    };
                    probe.target_port = Some(port);
                    probe.relay_url = relay;
                }
                probe
            })
            .collect();
        probes.scraped_at_ms = scrape(node, 2, 4);
        let vastai = s.rental.as_ref().map(|r| {
            let mut vastai = VastaiContext::new();
            vastai.container_id = Some(r.contract.to_owned());
            vastai.hostname = Some(s.hostname.to_owned());
            vastai.env_vars = [
                ("CONTAINER_ID", r.contract.to_owned()),
                ("CUDA_VERSION", "12.4.1".to_owned()),
                ("NVIDIA_DRIVER_CAPABILITIES", "compute,utility".to_owned()),
                ("NVIDIA_VISIBLE_DEVICES", "all".to_owned()),
                ("VAST_CONTAINERLABEL", format!("C.{}", r.contract)),
                ("VAST_GPU_NAME", r.gpu.to_owned()),
            ]
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value))
            .collect();
            vastai.process_start_ms = w - 1;
            vastai.captured_at_ms = w - 1;
            vastai
        });
        let mut process = ProcessStats::new();
        process.rss_bytes = Some(38_000_000 + age * 410 + node.rng.range(0, 90_000));
        process.vm_size_bytes = Some(1_209_000_000 + age * 96);
        process.open_fd_count = Some(31 + (node.peers.len() as u64) * 3 + node.rng.range(0, 2));
        process.cpu_ms = Some(age * 23 / 100 + 140);
        process.tokio = Some(TokioStats::new(TokioFlavor::MultiThread));
        process.captured_at_ms = w - 1;
        let subprocess = s.is_stage().then(|| {
            let mut subprocesses: Vec<Subprocess> = node
                .subs
                .iter()
                .map(|sub| {
                    let status = match sub.exit {
                        Some(_) => SubprocessStatus::Exited,
                        None => SubprocessStatus::Running,
                    };
                    let mut out = Subprocess::new(sub.label.clone(), sub.pid, status);
                    out.cmdline = Some(sub.cmdline.clone());
                    match sub.exit {
                        Some((exit_at, code, signal)) => {
                            out.exit_at_ms = Some(exit_at);
                            out.exit_code = code;
                            out.exit_signal = signal;
                        }
                        None => {
                            let up = w.saturating_sub(sub.spawn_at);
                            out.parent_pid = Some(s.pid);
                            out.spawn_at_ms = Some(sub.spawn_at);
                            // (RSS, virtual size, open fds, CPU per 100 ms of uptime)
                            let (rss, vm, fds, cpu) = match sub.label.as_str() {
                                "worker" => (
                                    412_000_000 + up.min(2_400) * 2_310_000,
                                    14_800_000_000,
                                    57,
                                    93,
                                ),
                                // Hung in the driver: its memory stays put, its CPU time climbs.
                                "gpu-probe" => (9_420_000 + up / 5_000 * 4_096, 211_000_000, 6, 97),
                                _ => (61_000_000 + up * 9_000, 402_000_000, 14, 41),
                            };
                            out.rss_bytes = Some(rss);
                            out.vm_size_bytes = Some(vm);
                            out.open_fd_count = Some(fds);
                            out.cpu_ms = Some(up * cpu / 100);
                        }
                    }
                    out
                })
                .collect();
            subprocesses.sort_by(|a, b| a.label.cmp(&b.label).then(a.pid.cmp(&b.pid)));
            let mut state = SubprocessState::new();
            state.subprocesses = subprocesses;
            state.scraped_at_ms = w - 2;
            state
        });

        // The application block of a stage: its worker's status, requests and GPU memory. Stage-2
        // cannot ask its GPU (its `gpu-probe` hangs), so it declares the gaps.
        let app = s.stage.map(|i| {
            let loaded = node.steps > 0 || node.in_flight > 0;
            let status = if node.stopped {
                WorkerStatus::Stopped
            } else if node.in_flight > 0 {
                WorkerStatus::Busy
            } else if loaded || age > 6_000 {
                WorkerStatus::Ready
            } else {
                WorkerStatus::Loading
            };
            let mut app = AppState::new(i, status);
            app.in_flight_requests = Some(node.in_flight);
            app.worker_queue_depth = Some(node.in_flight.saturating_sub(1));
            app.kv_cache_blocks_max = Some(2_048);
            app.kv_cache_blocks_used = Some(if node.stopped {
                0
            } else {
                96 + node.steps as u32 * 40
            });
            if i == 2 {
                app.api_gaps = vec![
                    CaptureGap::AppStateGpuMemUsedBytes,
                    CaptureGap::AppStateGpuMemTotalBytes,
                ];
            } else {
                app.gpu_mem_source = Some(ValueSource::Driver);
                app.gpu_mem_total_bytes = Some(25_757_220_864);
                app.gpu_mem_used_bytes = Some(if age > 5_000 {
                    17_180_000_000 + node.steps * 1_048_576
                } else {
                    1_310_000_000
                });
            }
            app.scraped_at_ms = Some(w - 3);
            app
        });
        // The actor runtime: mailboxes and the scheduler; without `tokio_unstable` the runtime
        // cannot say how old its oldest pending task is.
        let actor = |name: &str, depth: u64, processed: u64, p50: f64, p99: f64| {
            let mut a = ActorStats::new(name, depth, processed, 0);
            a.mailbox_source = Some(ValueSource::Measured);
            a.oldest_msg_age_ms = (depth > 0).then_some(depth * 37);
            a.p50_process_ms = Some(p50);
            a.p99_process_ms = Some(p99);
            a
        };
        let backlog = if n == ORCH && (RELAY_DOWN..RELAY_BACK + 1_000).contains(&t) {
            (t - RELAY_DOWN) / 1_500
        } else {
            0
        };
        let mut scheduler = SchedulerStats::new();
        scheduler.task_count = Some(41 + node.peers.len() as u64 * 6 + backlog);
        let mut actors = ActorState::new();
        actors.actors = vec![
            actor("diag_sink", 0, age / 1_000, 0.5, 2.25),
            actor(
                "pipeline",
                backlog,
                node.steps * 3 + age / 4_000,
                1.5,
                12.75,
            ),
            actor("reachability", 0, age / 250, 0.25, 1.5),
            actor("swim", 0, age / 180, 0.25, 3.5),
        ];
        actors.scheduler = Some(scheduler);
        actors.api_gaps = vec![CaptureGap::SchedulerStatsOldestPendingTaskAgeMs];
        actors.scraped_at_ms = Some(w - 2);

        let mut body = SnapshotBody::new(reachability);
        body.iroh = Some(iroh);
        body.swim = Some(swim);
        body.host = Some(host);
        body.probes = Some(probes);
        body.vastai = vastai;
        body.process = Some(process);
        body.subprocess = subprocess;
        body.app = app;
        body.actors = Some(actors);
        if generation == Generation::Oldest {
            oldest_body(&mut body);
        }
        let snapshot_id = format!("{}-{}", s.short(), node.snap_n);
        let mut snapshot = Snapshot::new(identity, run_id, snapshot_id, w, node.seq, trigger, body);
        if generation == Generation::Current {
            snapshot.diag_records_dropped = Some(0);
        }
        snapshot
    }
}

/// The host block: network state as of the last 10-second refresh, and DNS.
pub(crate) fn host_state(s: &Spec, n: usize, t: u64, scraped_at_ms: u64) -> HostState {
    let mut host = HostState::new();
    host.scraped_at_ms = scraped_at_ms;
    let first = s.boot + 1_000;
    if t < first {
        return host;
    }
    let refreshed = first + (t - first) / 10_000 * 10_000;
    let secs = (refreshed - s.boot) / 1_000;
    let refreshed_at_ms = s.wall(refreshed);
    // Per-second rates; stage-1 sits on a lossy host whose NIC and socket buffers drop.
    let lossy = n == 2;
    let interface = |name: &str, addresses: &[&str], mtu: u32, counters: InterfaceCounters| {
        let mut interface = NetInterface::new(name, true);
        interface.addresses = addresses.iter().map(|a| (*a).to_owned()).collect();
        interface.mtu = Some(mtu);
        interface.counters = Some(counters);
        interface
    };
    let eth = |name: &str, addresses: &[&str], base: u64| {
        let counters = InterfaceCounters::new(
            base * 1_000 + secs * 48_200,
            base + secs * 171,
            0,
            if lossy {
                40 + secs * 23 / 10
            } else if n == RELAY {
                7
            } else {
                3 + secs / 20
            },
            base * 800 + secs * 39_700,
            base * 4 / 5 + secs * 158,
            0,
            if lossy { secs / 12 } else { 0 },
        );
        interface(name, addresses, 1_500, counters)
    };
    let lo = interface(
        "lo",
        &["127.0.0.1/8", "::1/128"],
        65_536,
        InterfaceCounters::new(
            88_000 + secs * 6_100,
            900 + secs * 41,
            0,
            0,
            88_000 + secs * 6_100,
            900 + secs * 41,
            0,
            0,
        ),
    );
    let route = |family: RouteFamily, destination: &str, gateway: Option<&str>, interface: &str| {
        let mut route = Route::new(family, destination, interface);
        route.gateway = gateway.map(str::to_owned);
        route
    };
    let socket = |local: &str, inode: u64| UdpSocket::new(local, "0.0.0.0:0", "07", inode);
    let mut udp = UdpKernelStats::new();
    udp.in_datagrams = Some(12_400 + secs * 57);
    udp.no_ports = Some(match n {
        ORCH => 31 + secs / 4,
        RELAY => 410,
        _ => 2 + secs / 30,
    });
    udp.in_errors = Some(if lossy { 6 + secs * 4 / 5 } else { 0 });
    udp.out_datagrams = Some(11_900 + secs * 61);
    udp.rcvbuf_errors = Some(if lossy { 6 + secs * 4 / 5 } else { 0 });
    udp.sndbuf_errors = Some(0);
    let mut network = HostNetwork::new();
    if n == ORCH {
        network.interfaces = vec![
            eth(
                "enp3s0",
                &["192.168.1.23/24", "fe80::a00:27ff:fe4e:66a1/64"],
                930_000,
            ),
            lo,
        ];
        network.default_routes = vec![
            route(RouteFamily::V4, "0.0.0.0/0", Some("192.168.1.1"), "enp3s0"),
            route(RouteFamily::V4, "192.168.1.0/24", None, "enp3s0"),
            route(RouteFamily::V6, "::/0", Some("fe80::1"), "enp3s0"),
        ];
        network.udp_sockets = vec![socket("0.0.0.0:41641", 2_231_877)];
        network.conntrack_count = Some(286 + secs * 3 / 2);
        network.ipv6_enabled = Some(true);
        network.resolv_conf_nameservers = vec!["127.0.0.53".to_owned()];
    } else if n == RELAY {
        network.interfaces = vec![
            eth(
                "eth0",
                &["203.0.113.200/24", "2001:db8:200::2/64"],
                2_400_000,
            ),
            lo,
        ];
        network.default_routes = vec![
            route(RouteFamily::V4, "0.0.0.0/0", Some("203.0.113.1"), "eth0"),
            route(RouteFamily::V6, "::/0", Some("fe80::1"), "eth0"),
        ];
        network.udp_sockets = vec![socket("0.0.0.0:3478", 77_120), socket("[::]:3478", 77_121)];
        network.conntrack_count = Some(1_204 + secs / 2);
        network.ipv6_enabled = Some(true);
        network.resolv_conf_nameservers = vec!["185.12.64.1".to_owned(), "185.12.64.2".to_owned()];
    } else {
        network.interfaces = vec![eth("eth0", &["172.17.0.2/16"], 410_000)];
        network.default_routes = vec![
            route(RouteFamily::V4, "0.0.0.0/0", Some("172.17.0.1"), "eth0"),
            route(RouteFamily::V4, "172.17.0.0/16", None, "eth0"),
        ];
        network.udp_sockets = vec![socket("0.0.0.0:41641", 91_344 + n as u64)];
        network.ipv6_enabled = Some(false);
        network.resolv_conf_nameservers = vec!["8.8.8.8".to_owned(), "1.1.1.1".to_owned()];
    }
    network.udp_kernel_stats = Some(udp);
    network.refreshed_at_ms = refreshed_at_ms;
    let resolver = match n {
        ORCH => "127.0.0.53",
        RELAY => "185.12.64.1",
        _ => "8.8.8.8",
    };
    let mut dns = DnsResolution::new(COLLECTOR_HOST, refreshed_at_ms);
    dns.a_records = vec!["198.51.100.20".to_owned()];
    dns.resolver_used = Some(resolver.to_owned());
    host.network = Some(network);
    host.dns = vec![dns];
    host
}

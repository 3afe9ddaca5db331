// ccarena's dumbbell in ns-3, for benches/ns3_compare.py: N bulk TCP flows
// through one tail-drop bottleneck. Written for ccarena's benchmark (not an
// ns-3 example). Build and run it through benches/ns3_compare.py, or:
//
//   g++ -O2 -std=c++17 -I/usr/include dumbbell.cc -o dumbbell \
//       -lns3-core -lns3-network -lns3-internet -lns3-point-to-point \
//       -lns3-applications -lns3-traffic-control
//   ./dumbbell --flows=2 --cc=TcpCubic --rate=100Mbps --rtt=20ms \
//       --bufferBytes=250000 --duration=60s
//
// Topology, matching ccarena's model (docs/model.md, "Topology: the
// dumbbell"):
//
//   sender i --access link i (accessRate, rtt/2 each way)--> router
//   router --bottleneck (rate, no delay, tail drop of bufferBytes)--> receiver
//
// ccarena gives each flow a forward and a reverse path (a link at
// access_rate, 40 Gbit/s by default, then propagation delay; rtt_split 0.5
// puts half the RTT on each) and a bottleneck without delay. A
// point-to-point link's delay is the same both ways, so the whole RTT sits
// on the per-flow access link: rtt/2 forward, rtt/2 on the ACK path. All
// flows end at one receiver node (one sink per flow), right behind the
// bottleneck, as ccarena delivers a packet when it leaves the bottleneck.
// The ACKs cross the bottleneck link's other direction (no queueing to
// speak of: at most 4% of its rate), where ccarena's do not.
//
// Framing: ccarena counts 14 bytes of Ethernet header on every packet (a
// full segment is 1514 bytes on its links); ns-3's point-to-point device
// adds a 2-byte PPP header (1502 bytes). With --framing=14 (the default) the
// bottleneck's rate and byte limit are scaled by 1502/1514, so a full
// segment takes the same time on the wire and the buffer holds the same
// number of full segments as in ccarena. --framing=2 uses them as given.
//
// The queue: flow control is off on every device, so no queue disc is
// installed and the point-to-point device's own DropTailQueue is the
// bottleneck's buffer, the only place a packet is dropped (as in ccarena,
// the packet on the wire has left it). The other devices get queues too
// large ever to drop (ccarena's paths do not drop).
//
// TCP: ns-3's, set where it has the knob as ccarena models Linux: MSS
// 1448 with timestamps (1500-byte IP packets), SACK, initial window 10,
// PRR recovery, minimum RTO 200 ms, every flow paced (ccarena's default
// pacing = "fq": 200% of cwnd/srtt in slow start, 120% after, the initial
// window unpaced), socket buffers that never limit the window. Delayed ACKs
// are ns-3's defaults (every second segment, 200 ms timer; Linux: 40 ms).
// Not in ns-3: RACK-TLP, TSO bursts and deferral, SACK compression, PSH
// ACKs, receive-window growth, host timing noise (docs/model.md); ns-3
// 3.37's CUBIC has no TCP-friendly region.
//
// Output, one "key=value" a line: bottleneck_packets (packets dequeued from
// the bottleneck queue, i.e. that left it for the wire), bottleneck_drops,
// max_backlog_packets, goodput_bytes (received by the sinks), sim_time_s,
// events (ns-3's executed-event count), and the bottleneck device's rate
// and byte limit after the framing scale (device_rate_bps,
// device_buffer_bytes).

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>

using namespace ns3;

namespace
{

uint64_t g_dequeued = 0;
uint64_t g_dropped = 0;
uint32_t g_maxBacklog = 0;
Ptr<Queue<Packet>> g_queue;

void
OnDequeue(Ptr<const Packet>)
{
    ++g_dequeued;
}

void
OnEnqueue(Ptr<const Packet>)
{
    g_maxBacklog = std::max(g_maxBacklog, g_queue->GetNPackets());
}

void
OnDrop(Ptr<const Packet>)
{
    ++g_dropped;
}

// A point-to-point link between a and b with the given rate, delay and
// device queue limits (a's side, b's side).
NetDeviceContainer
Connect(Ptr<Node> a,
        Ptr<Node> b,
        DataRate rate,
        Time delay,
        const std::string& limitA,
        const std::string& limitB)
{
    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", DataRateValue(rate));
    p2p.SetChannelAttribute("Delay", TimeValue(delay));
    // Without flow control the traffic-control layer hands every packet to
    // the device, whose queue drops what does not fit (and traces it); with
    // it, the layer itself drops while the device queue is stopped.
    p2p.DisableFlowControl();
    NetDeviceContainer devs = p2p.Install(a, b);
    for (uint32_t k = 0; k < 2; ++k)
    {
        Ptr<PointToPointNetDevice> d = DynamicCast<PointToPointNetDevice>(devs.Get(k));
        d->GetQueue()->SetMaxSize(QueueSize(k == 0 ? limitA : limitB));
    }
    return devs;
}

} // namespace

int
main(int argc, char* argv[])
{
    uint32_t flows = 2;
    std::string cc = "TcpCubic";
    DataRate rate("100Mbps");
    DataRate accessRate("40Gbps");
    Time rtt = MilliSeconds(20);
    uint64_t bufferBytes = 250000;
    Time duration = Seconds(60);
    uint32_t mss = 1448;
    uint32_t framing = 14;
    bool pacing = true;
    uint32_t initCwnd = 10;
    Time minRto = MilliSeconds(200);

    CommandLine cmd(__FILE__);
    cmd.AddValue("flows", "number of bulk flows", flows);
    cmd.AddValue("cc", "congestion control TypeId, without ns3:: (TcpCubic, TcpNewReno, TcpBbr)", cc);
    cmd.AddValue("rate", "bottleneck rate (counting --framing bytes of header per packet)", rate);
    cmd.AddValue("accessRate", "rate of each sender's access link (ccarena's access_rate)", accessRate);
    cmd.AddValue("rtt", "base RTT: total propagation delay, half each way", rtt);
    cmd.AddValue("bufferBytes", "bottleneck tail-drop limit in bytes (counting --framing)", bufferBytes);
    cmd.AddValue("duration", "simulated time; the senders send until then", duration);
    cmd.AddValue("mss", "TCP segment size (payload bytes)", mss);
    cmd.AddValue("framing", "link header bytes that --rate and --bufferBytes count (ccarena: 14)", framing);
    cmd.AddValue("pacing", "pace every flow (Linux with sch_fq: 200%/120% of cwnd/srtt)", pacing);
    cmd.AddValue("initCwnd", "initial congestion window, segments", initCwnd);
    cmd.AddValue("minRto", "minimum retransmission timeout (Linux: 200 ms)", minRto);
    cmd.Parse(argc, argv);

    if (flows == 0 || duration.IsZero() || rate.GetBitRate() == 0)
    {
        std::fprintf(stderr, "dumbbell: flows, duration and rate must be positive\n");
        return 2;
    }
    if (flows > (1u << 22) - (1u << 14)) // the access links' /30s end below 10.255.0.0
    {
        std::fprintf(stderr, "dumbbell: at most %u flows\n", (1u << 22) - (1u << 14));
        return 2;
    }

    // Scale the bottleneck from --framing-byte headers to PPP's 2 bytes.
    const uint32_t ipBytes = mss + 52; // 20 IP + 20 TCP + 12 timestamp option
    const double scale = double(ipBytes + 2) / double(ipBytes + framing);
    const DataRate devRate(uint64_t(double(rate.GetBitRate()) * scale + 0.5));
    const uint64_t devBuffer = uint64_t(double(bufferBytes) * scale);

    // TCP as configured in ccarena's Linux model, where ns-3 has the knob.
    TypeId ccType = TypeId::LookupByName("ns3::" + cc);
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(ccType));
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                       TypeIdValue(TcpPrrRecovery::GetTypeId()));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(mss));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(initCwnd));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(minRto));
    Config::SetDefault("ns3::TcpSocketState::EnablePacing", BooleanValue(pacing));
    Config::SetDefault("ns3::TcpSocketState::PaceInitialWindow", BooleanValue(false));
    Config::SetDefault("ns3::TcpSocketState::PacingSsRatio", UintegerValue(200));
    Config::SetDefault("ns3::TcpSocketState::PacingCaRatio", UintegerValue(120));
    // Socket buffers never limit the window (ccarena's default rwnd is
    // unlimited): room for four times the most a flow can have in flight.
    const uint64_t bdp = uint64_t(rate.GetBitRate() * rtt.GetSeconds() / 8.0);
    uint64_t sockBuf = 4 * (bdp + bufferBytes);
    sockBuf = std::max<uint64_t>(sockBuf, 1 << 20);
    sockBuf = std::min<uint64_t>(sockBuf, uint64_t(1) << 30);
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(sockBuf));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(sockBuf));
    // Delayed ACKs: ns-3's defaults (every second segment, 200 ms timeout).

    NodeContainer senders;
    senders.Create(flows);
    Ptr<Node> router = CreateObject<Node>();
    Ptr<Node> receiver = CreateObject<Node>();

    InternetStackHelper stack;
    stack.Install(senders);
    stack.Install(router);
    stack.Install(receiver);

    const std::string huge = "1000000p";
    Ipv4AddressHelper addr;

    NetDeviceContainer bott = Connect(router,
                                      receiver,
                                      devRate,
                                      Seconds(0),
                                      std::to_string(devBuffer) + "B",
                                      huge);
    addr.SetBase("10.255.0.0", "255.255.255.252");
    Ipv4InterfaceContainer bottIf = addr.Assign(bott);
    const Ipv4Address sinkAddr = bottIf.GetAddress(1);

    for (uint32_t i = 0; i < flows; ++i)
    {
        NetDeviceContainer acc =
            Connect(senders.Get(i), router, accessRate, rtt / 2, huge, huge);
        // One /30 per access link, from 10.0.0.0 up to 10.254.255.255.
        const uint32_t net = (10u << 24) + (i << 2);
        addr.SetBase(Ipv4Address(net), "255.255.255.252");
        addr.Assign(acc);
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();
    // No device has a queue disc (the address helper installs one only on
    // devices with flow control): each device's own queue is the only one.
    for (NodeList::Iterator n = NodeList::Begin(); n != NodeList::End(); ++n)
    {
        Ptr<TrafficControlLayer> tc = (*n)->GetObject<TrafficControlLayer>();
        for (uint32_t d = 0; d < (*n)->GetNDevices(); ++d)
        {
            NS_ABORT_MSG_IF(tc->GetRootQueueDiscOnDevice((*n)->GetDevice(d)),
                            "unexpected queue disc");
        }
    }

    g_queue = DynamicCast<PointToPointNetDevice>(bott.Get(0))->GetQueue();
    const bool traced =
        g_queue->TraceConnectWithoutContext("Enqueue", MakeCallback(&OnEnqueue)) &&
        g_queue->TraceConnectWithoutContext("Dequeue", MakeCallback(&OnDequeue)) &&
        g_queue->TraceConnectWithoutContext("Drop", MakeCallback(&OnDrop));
    NS_ABORT_MSG_UNLESS(traced, "cannot trace the bottleneck queue");

    ApplicationContainer sinks;
    ApplicationContainer sources;
    for (uint32_t i = 0; i < flows; ++i)
    {
        const uint16_t port = uint16_t(10000 + i);
        PacketSinkHelper sink("ns3::TcpSocketFactory",
                              InetSocketAddress(Ipv4Address::GetAny(), port));
        sinks.Add(sink.Install(receiver));
        BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(sinkAddr, port));
        bulk.SetAttribute("MaxBytes", UintegerValue(0));
        bulk.SetAttribute("SendSize", UintegerValue(mss));
        sources.Add(bulk.Install(senders.Get(i)));
    }
    sinks.Start(Seconds(0));
    sources.Start(Seconds(0));
    sources.Stop(duration);

    Simulator::Stop(duration);
    Simulator::Run();

    uint64_t goodput = 0;
    for (uint32_t i = 0; i < sinks.GetN(); ++i)
    {
        goodput += DynamicCast<PacketSink>(sinks.Get(i))->GetTotalRx();
    }
    std::printf("bottleneck_packets=%" PRIu64 "\n", g_dequeued);
    std::printf("bottleneck_drops=%" PRIu64 "\n", g_dropped);
    std::printf("max_backlog_packets=%u\n", g_maxBacklog);
    std::printf("goodput_bytes=%" PRIu64 "\n", goodput);
    std::printf("sim_time_s=%.9f\n", Simulator::Now().GetSeconds());
    std::printf("events=%" PRIu64 "\n", Simulator::GetEventCount());
    std::printf("device_rate_bps=%" PRIu64 "\n", devRate.GetBitRate());
    std::printf("device_buffer_bytes=%" PRIu64 "\n", devBuffer);
    g_queue = nullptr;
    Simulator::Destroy();
    return 0;
}

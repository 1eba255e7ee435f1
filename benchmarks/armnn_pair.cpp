// armnn-pair: time two .armnn networks against each other in ONE process, on one CpuRef runtime,
// so that the virtual machine's speed drift (up to 75 % between whole-process runs here) falls on
// both alike. Both networks are loaded into one IRuntime and warmed up; then every round runs
// blocks of K inferences in the order A B B A ... (so neither side is always first, and each
// follows itself and the other equally often; see the copies' order in RunPair), timing each block with the thread's CPU clock
// (CLOCK_THREAD_CPUTIME_ID: CpuRef runs its workloads on the calling thread) and the monotonic
// wall clock. A round's ratio is sum(A) / sum(B) over the same number of inferences (~SECONDS of
// work per side); the verdict the caller takes is the median of the rounds' ratios. Each side is
// loaded --copies times (A0 B0 B1 A1: see LoadAll) and the blocks go round the copies.
//
// Usage: armnn-pair [--rounds 5] [--seconds 1.0] [--block-ms 1.0] [--warmup-ms 200] [--copies 2]
//                   [--out DIR [--profile]]
//                   --a MODEL.armnn [--a-graph-order] [--a-in IN.npy ...]
//                   --b MODEL.armnn [--b-graph-order] [--b-in IN.npy ...]
// Prints one JSON object on stdout (per-inference ms of each side per round, the ratios and their
// medians); with --out, writes each side's outputs of its last inference as DIR/a_output_<i>.npy
// and DIR/b_output_<i>.npy. Exit codes and one-line errors as armnn-run's.
//
// The .npy reader, the binding discovery and the error handling are armnn-run's own: this file
// includes tests/armnn_runtime/runner.cpp (its main renamed), so both read files the same way.
// benchmarks/build_pair.sh builds it against a built harness (never editing or rebuilding it).

#define main armnn_run_main
#include "runner.cpp"
#undef main

#include <cmath>
#include <ctime>

namespace
{

double Clock(clockid_t id)
{
    timespec ts;
    clock_gettime(id, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;  // ms
}

struct Side
{
    std::string name;          // "a" or "b"
    std::string path;
    bool graphOrder = false;
    std::vector<std::string> inputPaths;
    armnn::NetworkId id = 0;
    std::vector<NpyArray> arrays;
    armnn::InputTensors inputs;
    std::vector<std::vector<char>> outputBuffers;
    std::vector<armnn::TensorInfo> outputInfos;
    armnn::OutputTensors outputs;
};

std::string Who(const Side& s)
{
    return std::string(s.name == "a" ? "A" : "B") + " (" + s.path + ")";
}

std::vector<uint8_t> ReadFile(const std::string& path)
{
    std::ifstream f(path, std::ios::binary);
    if (!f)
    {
        Fail(kUsageError, "cannot open model file " + path + ": " + std::strerror(errno));
    }
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// Deserialize, optimize for CpuRef and load one side into the shared runtime, as armnn-run does.
void Load(Side& s, armnn::IRuntime& runtime, armnn::NetworkId id)
{
    std::vector<uint8_t> model = ReadFile(s.path);
    for (const auto& p : s.inputPaths)
    {
        s.arrays.push_back(ReadNpy(p));
    }
    SetStage("deserialize", kLoadError);
    armnn::INetworkPtr network = armnnDeserializer::IDeserializer::Create()->CreateNetworkFromBinary(model);
    BindingCollector bindings;
    CollectBindings(*network, bindings);
    std::sort(bindings.inputs.begin(), bindings.inputs.end());
    std::sort(bindings.outputs.begin(), bindings.outputs.end());
    if (s.graphOrder)
    {
        GraphOrderBindings(model, bindings.inputs, bindings.outputs);
    }
    SetStage("optimize", kLoadError);
#if ARMNN_MAJOR_VERSION >= 33
    const armnn::OptimizerOptionsOpaque optimizerOptions;
#else
    const armnn::OptimizerOptions optimizerOptions;
#endif
    armnn::IOptimizedNetworkPtr optNet =
        armnn::Optimize(*network, {armnn::Compute::CpuRef}, runtime.GetDeviceSpec(), optimizerOptions);
    if (!optNet)
    {
        Fail(kLoadError, Who(s) + ": optimize failed for CpuRef");
    }
    SetStage("load", kLoadError);
    std::string err;
    if (runtime.LoadNetwork(id, std::move(optNet), err) != armnn::Status::Success)
    {
        Fail(kLoadError, Who(s) + ": LoadNetwork failed: " + err);
    }
    s.id = id;
    if (s.arrays.size() != bindings.inputs.size())
    {
        Fail(kUsageError, Who(s) + ": network has " + std::to_string(bindings.inputs.size()) + " input(s) but " +
                          std::to_string(s.arrays.size()) + " .npy file(s) were given");
    }
    for (size_t i = 0; i < s.arrays.size(); ++i)
    {
        armnn::TensorInfo info = runtime.GetInputTensorInfo(id, bindings.inputs[i]);
        const NpyArray& arr = s.arrays[i];
        if (arr.descr != DescrFor(info.GetDataType()) || arr.shape != ShapeOf(info) ||
            arr.data.size() < info.GetNumBytes())
        {
            Fail(kUsageError, Who(s) + ": input " + std::to_string(i) + " (" + s.inputPaths[i] + ", " + arr.descr +
                              ShapeStr(arr.shape) + ") does not match the network input " + TensorInfoStr(info));
        }
#if ARMNN_MAJOR_VERSION >= 33
        info.SetConstant(true);
#endif
        s.inputs.emplace_back(bindings.inputs[i], armnn::ConstTensor(info, arr.data.data()));
    }
    for (armnn::LayerBindingId b : bindings.outputs)
    {
        s.outputInfos.push_back(runtime.GetOutputTensorInfo(id, b));
        s.outputBuffers.emplace_back(std::max<size_t>(s.outputInfos.back().GetNumBytes(), 1));
    }
    for (size_t i = 0; i < bindings.outputs.size(); ++i)
    {
        s.outputs.emplace_back(bindings.outputs[i], armnn::Tensor(s.outputInfos[i], s.outputBuffers[i].data()));
    }
}

struct Time
{
    double cpu = 0.0;   // thread CPU ms
    double wall = 0.0;  // monotonic ms
};

// K inferences of one side, timed as one block (a clock read costs ~0.3 us: per block, not per
// inference, so it does not dilute the ratio of small networks).
Time RunBlock(armnn::IRuntime& runtime, Side& s, int k)
{
    double c0 = Clock(CLOCK_THREAD_CPUTIME_ID);
    double w0 = Clock(CLOCK_MONOTONIC);
    for (int i = 0; i < k; ++i)
    {
        if (runtime.EnqueueWorkload(s.id, s.inputs, s.outputs) != armnn::Status::Success)
        {
            Fail(kRuntimeError, Who(s) + ": EnqueueWorkload returned failure");
        }
    }
    double w1 = Clock(CLOCK_MONOTONIC);
    double c1 = Clock(CLOCK_THREAD_CPUTIME_ID);
    return {c1 - c0, w1 - w0};
}

// Warm-up: at least 3 inferences and warmupMs of CPU; returns the median CPU ms of one inference.
double WarmUp(armnn::IRuntime& runtime, Side& s, double warmupMs)
{
    std::vector<double> each;
    double spent = 0.0;
    while (each.size() < 3 || spent < warmupMs)
    {
        each.push_back(RunBlock(runtime, s, 1).cpu);
        spent += each.back();
    }
    std::sort(each.begin(), each.end());
    return each[each.size() / 2];
}

double Median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string Json(const std::vector<double>& v)
{
    std::ostringstream ss;
    ss.precision(9);
    ss << "[";
    for (size_t i = 0; i < v.size(); ++i)
    {
        ss << (i ? ", " : "") << v[i];
    }
    ss << "]";
    return ss.str();
}

struct Options
{
    int rounds = 5;
    double seconds = 1.0;   // CPU seconds of work per side per round
    double blockMs = 1.0;   // a timed block holds enough inferences for this much work
    double warmupMs = 200.0;
    std::string outDir;
    bool profile = false;   // Arm NN's profiler on both networks in the rounds (costs time itself)
    int copies = 2;         // networks loaded per side (LoadAll)
    Side a, b;
};

Options ParseArgs(int argc, char** argv)
{
    Options o;
    o.a.name = "a";
    o.b.name = "b";
    auto value = [&](int& i) -> std::string {
        if (i + 1 >= argc)
        {
            Fail(kUsageError, std::string(argv[i]) + " needs a value");
        }
        return argv[++i];
    };
    for (int i = 1; i < argc; ++i)
    {
        std::string x = argv[i];
        if (x == "--rounds") o.rounds = std::stoi(value(i));
        else if (x == "--seconds") o.seconds = std::stod(value(i));
        else if (x == "--block-ms") o.blockMs = std::stod(value(i));
        else if (x == "--warmup-ms") o.warmupMs = std::stod(value(i));
        else if (x == "--out") o.outDir = value(i);
        else if (x == "--profile") o.profile = true;
        else if (x == "--copies") o.copies = std::stoi(value(i));
        else if (x == "--a") o.a.path = value(i);
        else if (x == "--b") o.b.path = value(i);
        else if (x == "--a-in") o.a.inputPaths.push_back(value(i));
        else if (x == "--b-in") o.b.inputPaths.push_back(value(i));
        else if (x == "--a-graph-order") o.a.graphOrder = true;
        else if (x == "--b-graph-order") o.b.graphOrder = true;
        else if (x == "--version")
        {
            std::cout << "armnn-pair " << ARMNN_HARNESS_RELEASE << " (libarmnn " << ARMNN_VERSION << ")" << std::endl;
            std::exit(kOk);
        }
        else Fail(kUsageError, "unknown argument " + x + " (see the head of benchmarks/armnn_pair.cpp)");
    }
    if (o.a.path.empty() || o.b.path.empty() || o.rounds < 1 || o.copies < 1 || !(o.seconds > 0) || !(o.blockMs > 0) ||
        (o.profile && o.outDir.empty()))
    {
        Fail(kUsageError, "need --a MODEL and --b MODEL, --rounds >= 1, --copies >= 1, --seconds > 0, --block-ms > 0, "
                          "and --out DIR with --profile");
    }
    return o;
}

void WriteOutputs(const Side& s, const std::string& dir)
{
    for (size_t i = 0; i < s.outputInfos.size(); ++i)
    {
        const armnn::TensorInfo& info = s.outputInfos[i];
        WriteNpy(dir + "/" + s.name + "_output_" + std::to_string(i) + ".npy", DescrFor(info.GetDataType()),
                 ShapeOf(info), s.outputBuffers[i].data(), info.GetNumBytes());
    }
}

// Loads `copies` networks of each side in the order A0 B0 B1 A1 (A0 B0 B1 A1 A2 B2 ... for more):
// where a network's buffers land moves its time by up to ~0.5 % here, and this order gives both
// sides the same mean place.
void LoadAll(Options& o, armnn::IRuntime& runtime, std::vector<Side>& as, std::vector<Side>& bs)
{
    as.assign(static_cast<size_t>(o.copies), o.a);   // all copies made before any is loaded: the
    bs.assign(static_cast<size_t>(o.copies), o.b);   // input tensors point into each copy's arrays
    armnn::NetworkId id = 0;
    for (size_t c = 0; c < as.size(); ++c)
    {
        Side& first = c % 2 == 0 ? as[c] : bs[c];
        Side& second = c % 2 == 0 ? bs[c] : as[c];
        Load(first, runtime, id++);
        Load(second, runtime, id++);
    }
}

int RunPair(int argc, char** argv)
{
    Options o = ParseArgs(argc, argv);
    armnn::IRuntime::CreationOptions options;
    armnn::IRuntimePtr runtime = armnn::IRuntime::Create(options);
    std::vector<Side> as, bs;
    LoadAll(o, *runtime, as, bs);
    SetStage("inference", kRuntimeError);
    double warmA = 0.0, warmB = 0.0;
    for (size_t c = 0; c < as.size(); ++c)
    {
        warmA += WarmUp(*runtime, as[c], o.warmupMs) / o.copies;
        warmB += WarmUp(*runtime, bs[c], o.warmupMs) / o.copies;
    }
    double each = std::max(0.5 * (warmA + warmB), 1e-4);
    int k = std::max(1, static_cast<int>(std::ceil(o.blockMs / each)));
    int pairs = std::max(2, static_cast<int>(std::ceil(o.seconds * 1e3 / (k * each))));
    pairs = (pairs + 2 * o.copies - 1) / (2 * o.copies) * (2 * o.copies);   // AB and BA on every copy alike
    long n = static_cast<long>(pairs) * k;   // inferences per side per round
    if (o.profile)   // copy 0 of each side only: its profile holds half the inferences with 2 copies
    {
        runtime->GetProfiler(as[0].id)->EnableProfiling(true);
        runtime->GetProfiler(bs[0].id)->EnableProfiling(true);
    }

    std::vector<double> aCpu, bCpu, aWall, bWall, rCpu, rWall, rPairs, thread, process;
    for (int r = 0; r < o.rounds; ++r)
    {
        Time ta, tb;
        std::vector<double> pairRatios;   // A / B of each adjacent AB or BA pair of blocks
        double p0 = Clock(CLOCK_PROCESS_CPUTIME_ID);
        double t0 = Clock(CLOCK_THREAD_CPUTIME_ID);
        for (int p = 0; p < pairs; ++p)
        {
            // Copy c runs AB BA on even copies and BA AB on odd ones: A0 B0 B0 A0 B1 A1 A1 B1 A0 ...
            // so each side follows itself once per cycle (B0 B0, A1 A1). With AB BA on every copy
            // (A0 B0 B0 A0 A1 B1 B1 A1), B followed itself twice and A never did, and a network
            // run right after itself finds its buffers in cache: an A/A control on 20.08 gave A
            // 0.4-0.5 % slower in 5 of 5 runs (long_names_mlp; 0.998-1.002 with this order).
            size_t c = static_cast<size_t>(p / 2 % o.copies);
            bool aFirst = (p % 2 == 0) != (c % 2 == 1);
            Time t1 = RunBlock(*runtime, aFirst ? as[c] : bs[c], k);
            Time t2 = RunBlock(*runtime, aFirst ? bs[c] : as[c], k);
            const Time& ti = aFirst ? t1 : t2;   // A's block
            const Time& tj = aFirst ? t2 : t1;   // B's block
            pairRatios.push_back(ti.cpu / tj.cpu);
            ta.cpu += ti.cpu; ta.wall += ti.wall;
            tb.cpu += tj.cpu; tb.wall += tj.wall;
        }
        thread.push_back(Clock(CLOCK_THREAD_CPUTIME_ID) - t0);
        process.push_back(Clock(CLOCK_PROCESS_CPUTIME_ID) - p0);
        aCpu.push_back(ta.cpu / n); bCpu.push_back(tb.cpu / n);
        aWall.push_back(ta.wall / n); bWall.push_back(tb.wall / n);
        rCpu.push_back(ta.cpu / tb.cpu); rWall.push_back(ta.wall / tb.wall);
        rPairs.push_back(Median(pairRatios));
    }
    if (!o.outDir.empty())
    {
        SetStage("writing outputs", kRuntimeError);
        mkdir(o.outDir.c_str(), 0777);
        for (const Side* s : {&as[0], &bs[0]})
        {
            WriteOutputs(*s, o.outDir);
            if (o.profile)   // per workload event: count, mean, min, max and total wall time
            {
                std::ofstream f(o.outDir + "/" + s->name + "_profile.txt");
                runtime->GetProfiler(s->id)->AnalyzeEventsAndWriteResults(f);
            }
        }
    }
    // process vs thread CPU per round: equal when CpuRef did all its work on this thread
    std::cout << "{\"release\": \"" << ARMNN_HARNESS_RELEASE << "\", \"block\": " << k << ", \"pairs\": " << pairs
              << ", \"copies\": " << o.copies
              << ", \"inferences_per_round\": " << n << ", \"warm_cpu_ms\": " << Json({warmA, warmB})
              << ", \"a_cpu_ms\": " << Json(aCpu) << ", \"b_cpu_ms\": " << Json(bCpu)
              << ", \"a_wall_ms\": " << Json(aWall) << ", \"b_wall_ms\": " << Json(bWall)
              << ", \"ratio_cpu\": " << Json(rCpu) << ", \"ratio_wall\": " << Json(rWall)
              << ", \"median_cpu\": " << Median(rCpu) << ", \"median_wall\": " << Median(rWall)
              << ", \"ratio_cpu_pair_median\": " << Json(rPairs) << ", \"median_cpu_pair_median\": " << Median(rPairs)
              << ", \"round_thread_cpu_ms\": " << Json(thread) << ", \"round_process_cpu_ms\": " << Json(process)
              << "}" << std::endl;
    return kOk;
}

} // namespace

int main(int argc, char** argv)
{
    for (int sig : {SIGABRT, SIGSEGV, SIGFPE, SIGBUS, SIGILL})
    {
        std::signal(sig, OnFatalSignal);
    }
    try
    {
        return RunPair(argc, argv);
    }
    catch (const Failure& f)
    {
        std::cerr << "armnn-pair: error: " << OneLine(f.message) << std::endl;
        return f.code;
    }
    catch (const std::exception& e)
    {
        std::cerr << "armnn-pair: error: " << OneLine(e.what()) << std::endl;
        return g_StageCode;
    }
}

// armnn-run: load a serialized Arm NN (.armnn) network with Arm NN's own deserializer (20.08 or
// 23.08, the release this is built against), run it on the CpuRef backend and write its outputs
// as .npy files. One source for both releases: the few API differences are under
// `#if ARMNN_MAJOR_VERSION` (20.08 is library version 22, 23.08 is 33).
//
// Usage: armnn-run [--repeat N] [--layers] [--graph-order] [--dot FILE] MODEL.armnn OUTDIR [IN0.npy ...]
//        armnn-run --version     prints "armnn-run <release> (libarmnn <X.Y.Z>)"
//
// Exit codes:
//   0  success
//   1  runtime failure (EnqueueWorkload failed or threw, outputs could not be written)
//   2  usage or input error (bad arguments, unreadable/invalid .npy, wrong count/shape/dtype)
//   3  the network could not be deserialized, optimized for CpuRef or loaded
//
// Every error is reported as one line on stderr: "armnn-run: error: ...".
//
// Binding: the network's Input layers are sorted by their LayerBindingId and input file i
// feeds the i-th of them; output i (OUTDIR/output_<i>.npy) is the Output layer with the i-th
// smallest LayerBindingId. For files whose Input/Output binding ids are 0..n-1 this is
// "input i <-> binding id i". Binding ids are discovered by visiting the deserialized
// INetwork (20.08: ILayerVisitor::VisitInputLayer / VisitOutputLayer; 23.08: IStrategy), so layer
// names do not matter.
// With --graph-order, inputs/outputs follow SerializedGraph.inputIds/outputIds instead (useful for
// files written by Arm NN's own serializer, whose binding ids are e.g. TfLite tensor indices).
// Tensor infos come from the loaded runtime (IRuntime::GetInputTensorInfo/GetOutputTensorInfo).
//
// Options: --repeat N   run N inferences, print "time_ms=<mean ms per inference>" on stdout
//          --layers     print one line per serialized layer, then one per input/output binding
//          --dot FILE   write the optimized graph (IOptimizedNetwork::SerializeToDot) to FILE

#include <armnn/ArmNN.hpp>
#include <armnn/INetwork.hpp>
#include <armnn/IRuntime.hpp>
#include <armnn/Version.hpp>
#if ARMNN_MAJOR_VERSION >= 33
#include <armnn/IStrategy.hpp>
#else
#include <armnn/LayerVisitorBase.hpp>
#endif
#if ARMNN_MAJOR_VERSION >= 33
// 23.08 made the deserializer's class (DeserializerImpl) a private member of IDeserializer; its
// static graph helpers are what --layers / --graph-order use, so this one header (its own
// includes are in already) is read with `private` open.
#define private public
#include <armnnDeserializer/IDeserializer.hpp>
#undef private
#else
#include <armnnDeserializer/IDeserializer.hpp>
#endif

#include "Deserializer.hpp"  // concrete class: static graph helpers for --layers

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#ifndef ARMNN_HARNESS_RELEASE
#error "build with -DARMNN_HARNESS_RELEASE='\"<release>\"' (build.sh does)"
#endif

namespace
{

// The deserializer's static graph helpers (LoadGraphFromBinary, GetBaseLayer, GetBindingLayerInfo).
#if ARMNN_MAJOR_VERSION >= 33
using DeserializerStatics = armnnDeserializer::IDeserializer::DeserializerImpl;
#else
using DeserializerStatics = armnnDeserializer::Deserializer;
#endif

enum ExitCode
{
    kOk = 0,
    kRuntimeError = 1,
    kUsageError = 2,
    kLoadError = 3,
};

struct Failure
{
    int code;
    std::string message;
};

[[noreturn]] void Fail(int code, const std::string& message)
{
    throw Failure{code, message};
}

std::string OneLine(std::string s)
{
    for (char& c : s)
    {
        if (c == '\n' || c == '\r')
        {
            c = ' ';
        }
    }
    while (!s.empty() && s.back() == ' ')
    {
        s.pop_back();
    }
    return s;
}

// ---------------------------------------------------------------------------------------
// Fatal-signal handling: Arm NN / flatbuffers assertions abort(); report it as one line and
// map it to the exit code of the stage we were in.
// ---------------------------------------------------------------------------------------
volatile sig_atomic_t g_StageCode = kLoadError;
const char* volatile g_StageName = "deserialize";

void WriteStderr(const char* s)
{
    ssize_t ignored = write(STDERR_FILENO, s, std::strlen(s));
    (void)ignored;
}

void OnFatalSignal(int sig)
{
    const char* what = sig == SIGABRT ? "SIGABRT" : sig == SIGSEGV ? "SIGSEGV" : sig == SIGFPE ? "SIGFPE"
                     : sig == SIGBUS ? "SIGBUS" : "SIGILL";
    char buf[256];
    int n = snprintf(buf, sizeof(buf), "armnn-run: error: fatal signal %s during %s\n", what, g_StageName);
    if (n > 0)
    {
        WriteStderr(buf);
    }
    _exit(g_StageCode);
}

void SetStage(const char* name, int code)
{
    g_StageName = name;
    g_StageCode = code;
}

// ---------------------------------------------------------------------------------------
// .npy I/O
// ---------------------------------------------------------------------------------------
struct NpyArray
{
    std::string descr;              // normalised, e.g. "<f4", "|u1"
    std::vector<unsigned int> shape;
    std::vector<char> data;
};

std::string DescrFor(armnn::DataType t)
{
    switch (t)
    {
        case armnn::DataType::Float32:  return "<f4";
        case armnn::DataType::Float16:  return "<f2";
        case armnn::DataType::QAsymmU8: return "|u1";
        case armnn::DataType::Signed32: return "<i4";
        case armnn::DataType::Boolean:  return "|b1";
        case armnn::DataType::QAsymmS8: return "|i1";
        case armnn::DataType::QSymmS8:  return "|i1";
        case armnn::DataType::QSymmS16: return "<i2";
        default: return "";
    }
}

// Normalise byte-order marks: '=' (native, little endian here) -> '<', 1-byte types -> '|'.
std::string NormaliseDescr(const std::string& d)
{
    if (d.size() < 3)
    {
        return d;
    }
    std::string body = d.substr(1);
    char order = d[0];
    if (body == "u1" || body == "i1" || body == "b1")
    {
        return "|" + body;
    }
    if (order == '=')
    {
        order = '<';
    }
    return std::string(1, order) + body;
}

std::string ShapeStr(const std::vector<unsigned int>& shape)
{
    std::ostringstream ss;
    ss << "(";
    for (size_t i = 0; i < shape.size(); ++i)
    {
        ss << shape[i];
        if (shape.size() == 1 || i + 1 < shape.size())
        {
            ss << ",";
        }
        if (i + 1 < shape.size())
        {
            ss << " ";
        }
    }
    ss << ")";
    return ss.str();
}

std::vector<unsigned int> ShapeOf(const armnn::TensorInfo& info)
{
    std::vector<unsigned int> s;
    const armnn::TensorShape& shape = info.GetShape();
    for (unsigned int i = 0; i < shape.GetNumDimensions(); ++i)
    {
        s.push_back(shape[i]);
    }
    return s;
}

// Find the value text of key 'key' in a numpy header dict.
std::string HeaderValue(const std::string& header, const std::string& key, const std::string& path)
{
    std::string pattern = "'" + key + "'";
    size_t pos = header.find(pattern);
    if (pos == std::string::npos)
    {
        Fail(kUsageError, path + ": .npy header has no '" + key + "' entry");
    }
    pos = header.find(':', pos + pattern.size());
    if (pos == std::string::npos)
    {
        Fail(kUsageError, path + ": malformed .npy header");
    }
    ++pos;
    while (pos < header.size() && header[pos] == ' ')
    {
        ++pos;
    }
    size_t end;
    if (header[pos] == '\'')
    {
        end = header.find('\'', pos + 1);
        if (end == std::string::npos)
        {
            Fail(kUsageError, path + ": malformed .npy header");
        }
        return header.substr(pos + 1, end - pos - 1);
    }
    if (header[pos] == '(')
    {
        end = header.find(')', pos);
        if (end == std::string::npos)
        {
            Fail(kUsageError, path + ": malformed .npy header");
        }
        return header.substr(pos, end - pos + 1);
    }
    end = header.find_first_of(",}", pos);
    return header.substr(pos, end - pos);
}

NpyArray ReadNpy(const std::string& path)
{
    std::ifstream f(path, std::ios::binary);
    if (!f)
    {
        Fail(kUsageError, "cannot open input file " + path + ": " + std::strerror(errno));
    }
    std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    static const char kMagic[] = "\x93NUMPY";
    if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0)
    {
        Fail(kUsageError, path + ": not a .npy file");
    }
    unsigned major = static_cast<unsigned char>(bytes[6]);
    size_t headerLen;
    size_t headerStart;
    if (major == 1)
    {
        headerLen = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
        headerStart = 10;
    }
    else if (major == 2 || major == 3)
    {
        if (bytes.size() < 12)
        {
            Fail(kUsageError, path + ": truncated .npy header");
        }
        headerLen = 0;
        for (int i = 3; i >= 0; --i)
        {
            headerLen = (headerLen << 8) | static_cast<unsigned char>(bytes[8 + i]);
        }
        headerStart = 12;
    }
    else
    {
        Fail(kUsageError, path + ": unsupported .npy version " + std::to_string(major));
    }
    if (headerStart + headerLen > bytes.size())
    {
        Fail(kUsageError, path + ": truncated .npy header");
    }
    std::string header(bytes.data() + headerStart, headerLen);

    NpyArray arr;
    arr.descr = NormaliseDescr(HeaderValue(header, "descr", path));
    std::string fortran = HeaderValue(header, "fortran_order", path);
    if (fortran.find("True") != std::string::npos)
    {
        Fail(kUsageError, path + ": Fortran-ordered arrays are not supported (use C order)");
    }
    std::string shapeText = HeaderValue(header, "shape", path);
    std::string digits;
    for (char c : shapeText)
    {
        if (c >= '0' && c <= '9')
        {
            digits.push_back(c);
        }
        else if (!digits.empty())
        {
            arr.shape.push_back(static_cast<unsigned int>(std::stoul(digits)));
            digits.clear();
        }
    }
    if (!digits.empty())
    {
        arr.shape.push_back(static_cast<unsigned int>(std::stoul(digits)));
    }
    arr.data.assign(bytes.begin() + static_cast<long>(headerStart + headerLen), bytes.end());
    return arr;
}

void WriteNpy(const std::string& path, const std::string& descr, const std::vector<unsigned int>& shape,
              const char* data, size_t numBytes)
{
    std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + ShapeStr(shape) + ", }";
    // magic(6) + version(2) + len(2) + header + '\n' must be a multiple of 64
    size_t total = 10 + header.size() + 1;
    size_t padded = (total + 63) / 64 * 64;
    header.append(padded - total, ' ');
    header.push_back('\n');

    std::ofstream f(path, std::ios::binary);
    if (!f)
    {
        Fail(kRuntimeError, "cannot write " + path + ": " + std::strerror(errno));
    }
    const char magic[8] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
    f.write(magic, 8);
    const unsigned char len[2] = {static_cast<unsigned char>(header.size() & 0xff),
                                  static_cast<unsigned char>((header.size() >> 8) & 0xff)};
    f.write(reinterpret_cast<const char*>(len), 2);
    f.write(header.data(), static_cast<std::streamsize>(header.size()));
    f.write(data, static_cast<std::streamsize>(numBytes));
    if (!f)
    {
        Fail(kRuntimeError, "cannot write " + path);
    }
}

// ---------------------------------------------------------------------------------------
// Binding discovery
// ---------------------------------------------------------------------------------------
#if ARMNN_MAJOR_VERSION >= 33
class BindingCollector : public armnn::IStrategy
{
public:
    void ExecuteStrategy(const armnn::IConnectableLayer* layer, const armnn::BaseDescriptor&,
                         const std::vector<armnn::ConstTensor>&, const char*, const armnn::LayerBindingId id) override
    {
        if (layer->GetType() == armnn::LayerType::Input)
        {
            inputs.push_back(id);
        }
        else if (layer->GetType() == armnn::LayerType::Output)
        {
            outputs.push_back(id);
        }
    }
    std::vector<armnn::LayerBindingId> inputs;
    std::vector<armnn::LayerBindingId> outputs;
};

void CollectBindings(const armnn::INetwork& network, BindingCollector& bindings)
{
    network.ExecuteStrategy(bindings);
}
#else
class BindingCollector : public armnn::LayerVisitorBase<armnn::VisitorNoThrowPolicy>
{
public:
    void VisitInputLayer(const armnn::IConnectableLayer*, armnn::LayerBindingId id, const char*) override
    {
        inputs.push_back(id);
    }
    void VisitOutputLayer(const armnn::IConnectableLayer*, armnn::LayerBindingId id, const char*) override
    {
        outputs.push_back(id);
    }
    std::vector<armnn::LayerBindingId> inputs;
    std::vector<armnn::LayerBindingId> outputs;
};

void CollectBindings(const armnn::INetwork& network, BindingCollector& bindings)
{
    network.Accept(bindings);
}
#endif

std::string TensorInfoStr(const armnn::TensorInfo& info)
{
    std::string d = DescrFor(info.GetDataType());
    return std::string(armnn::GetDataTypeName(info.GetDataType())) + (d.empty() ? "" : "[" + d + "]") +
           ShapeStr(ShapeOf(info));
}

// Binding ids in the order of SerializedGraph.inputIds / outputIds (--graph-order).
// bindingIdsScheme 0 (no featureVersions, as in the older schema): the ids are layer `index` values;
// bindingIdsScheme 1 (what Arm NN 20.08+'s own serializer writes): the ids are the binding ids.
void GraphOrderBindings(const std::vector<uint8_t>& model, std::vector<armnn::LayerBindingId>& inputs,
                        std::vector<armnn::LayerBindingId>& outputs)
{
    using Deserializer = DeserializerStatics;
    auto graph = Deserializer::LoadGraphFromBinary(model.data(), model.size());
    unsigned int scheme = graph->featureVersions() ? graph->featureVersions()->bindingIdsScheme() : 0;
    auto resolve = [&](int id) -> armnn::LayerBindingId {
        if (scheme != 0)
        {
            return id;
        }
        for (unsigned int i = 0; graph->layers() && i < graph->layers()->size(); ++i)
        {
            if (Deserializer::GetBaseLayer(graph, i)->index() == static_cast<unsigned int>(id))
            {
                return Deserializer::GetBindingLayerInfo(graph, i);
            }
        }
        throw armnn::ParseException("graph input/output id " + std::to_string(id) + " names no layer");
    };
    inputs.clear();
    outputs.clear();
    for (unsigned int i = 0; graph->inputIds() && i < graph->inputIds()->size(); ++i)
    {
        inputs.push_back(resolve(graph->inputIds()->Get(i)));
    }
    for (unsigned int i = 0; graph->outputIds() && i < graph->outputIds()->size(); ++i)
    {
        outputs.push_back(resolve(graph->outputIds()->Get(i)));
    }
}

void PrintLayers(const std::vector<uint8_t>& model)
{
    using Deserializer = DeserializerStatics;
    auto graph = Deserializer::LoadGraphFromBinary(model.data(), model.size());
    const auto* layers = graph->layers();
    for (unsigned int i = 0; layers && i < layers->size(); ++i)
    {
        auto layer = layers->Get(i);
        auto base = Deserializer::GetBaseLayer(graph, i);
        std::ostringstream ss;
        ss << "layer " << i << " index=" << base->index()
           << " type=" << armnnSerializer::EnumNameLayer(layer->layer_type())
           << " name=" << (base->layerName() ? base->layerName()->str() : std::string());
        ss << " inputs=[";
        if (base->inputSlots())
        {
            for (unsigned int s = 0; s < base->inputSlots()->size(); ++s)
            {
                auto c = base->inputSlots()->Get(s)->connection();
                if (s)
                {
                    ss << ",";
                }
                if (c)
                {
                    ss << c->sourceLayerIndex() << ":" << c->outputSlotIndex();
                }
            }
        }
        ss << "] outputs=[";
        if (base->outputSlots())
        {
            for (unsigned int s = 0; s < base->outputSlots()->size(); ++s)
            {
                auto ti = base->outputSlots()->Get(s)->tensorInfo();
                if (s)
                {
                    ss << ",";
                }
                if (ti)
                {
                    ss << armnnSerializer::EnumNameDataType(ti->dataType()) << "(";
                    if (ti->dimensions())
                    {
                        for (unsigned int d = 0; d < ti->dimensions()->size(); ++d)
                        {
                            ss << (d ? "," : "") << ti->dimensions()->Get(d);
                        }
                    }
                    ss << ")";
                }
            }
        }
        ss << "]";
        std::cout << ss.str() << "\n";
    }
}

const char* const kUsage =
    "usage: armnn-run [--repeat N] [--layers] [--graph-order] [--dot FILE] MODEL.armnn OUTDIR [IN0.npy ...]";

int Run(int argc, char** argv)
{
    int repeat = 1;
    bool timing = false;
    bool layers = false;
    bool graphOrder = false;
    std::string dotPath;
    std::vector<std::string> positional;
    for (int i = 1; i < argc; ++i)
    {
        std::string a = argv[i];
        if (a == "--repeat")
        {
            if (i + 1 >= argc)
            {
                Fail(kUsageError, "--repeat needs a value");
            }
            char* end = nullptr;
            long v = std::strtol(argv[++i], &end, 10);
            if (!end || *end != '\0' || v < 1 || v > 100000000)
            {
                Fail(kUsageError, std::string("invalid --repeat value: ") + argv[i]);
            }
            repeat = static_cast<int>(v);
            timing = true;
        }
        else if (a == "--layers")
        {
            layers = true;
        }
        else if (a == "--graph-order")
        {
            graphOrder = true;
        }
        else if (a == "--dot")
        {
            if (i + 1 >= argc)
            {
                Fail(kUsageError, "--dot needs a file name");
            }
            dotPath = argv[++i];
        }
        else if (a == "--version")
        {
            std::cout << "armnn-run " << ARMNN_HARNESS_RELEASE << " (libarmnn " << ARMNN_VERSION << ")" << std::endl;
            std::exit(kOk);
        }
        else if (a == "-h" || a == "--help")
        {
            std::cerr << kUsage << "\n";
            std::exit(kUsageError);
        }
        else if (a == "--")
        {
            for (++i; i < argc; ++i)
            {
                positional.push_back(argv[i]);
            }
        }
        else if (a.size() > 1 && a[0] == '-' && a.substr(0, 2) == "--")
        {
            Fail(kUsageError, "unknown option " + a);
        }
        else
        {
            positional.push_back(a);
        }
    }
    if (positional.size() < 2)
    {
        Fail(kUsageError, std::string("expected MODEL.armnn OUTDIR [IN0.npy ...]; ") + kUsage);
    }
    const std::string modelPath = positional[0];
    const std::string outDir = positional[1];
    const std::vector<std::string> inputPaths(positional.begin() + 2, positional.end());

    struct stat st;
    if (stat(outDir.c_str(), &st) != 0)
    {
        if (mkdir(outDir.c_str(), 0777) != 0 && errno != EEXIST)
        {
            Fail(kUsageError, "cannot create output directory " + outDir + ": " + std::strerror(errno));
        }
    }
    else if (!S_ISDIR(st.st_mode))
    {
        Fail(kUsageError, "output path " + outDir + " is not a directory");
    }

    std::vector<uint8_t> model;
    {
        std::ifstream f(modelPath, std::ios::binary);
        if (!f)
        {
            Fail(kUsageError, "cannot open model file " + modelPath + ": " + std::strerror(errno));
        }
        model.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    }

    // Read the inputs first: input errors are usage errors (exit 2) whatever the model is.
    std::vector<NpyArray> inputArrays;
    for (const auto& p : inputPaths)
    {
        inputArrays.push_back(ReadNpy(p));
    }

    // ---- deserialize
    SetStage("deserialize", kLoadError);
    armnn::INetworkPtr network(nullptr, nullptr);
    try
    {
        auto deserializer = armnnDeserializer::IDeserializer::Create();
        network = deserializer->CreateNetworkFromBinary(model);
    }
    catch (const armnn::Exception& e)
    {
        Fail(kLoadError, std::string("deserialize failed: ") + e.what());
    }
    catch (const std::exception& e)
    {
        Fail(kLoadError, std::string("deserialize failed: ") + e.what());
    }
    if (!network)
    {
        Fail(kLoadError, "deserialize failed: no network");
    }
    if (layers)
    {
        try
        {
            PrintLayers(model);
        }
        catch (const std::exception& e)
        {
            Fail(kLoadError, std::string("cannot list layers: ") + e.what());
        }
    }

    BindingCollector bindings;
    CollectBindings(*network, bindings);
    std::sort(bindings.inputs.begin(), bindings.inputs.end());
    std::sort(bindings.outputs.begin(), bindings.outputs.end());
    if (graphOrder)
    {
        std::vector<armnn::LayerBindingId> ins;
        std::vector<armnn::LayerBindingId> outs;
        try
        {
            GraphOrderBindings(model, ins, outs);
        }
        catch (const std::exception& e)
        {
            Fail(kLoadError, std::string("cannot read graph input/output ids: ") + e.what());
        }
        auto sortedIns = ins;
        auto sortedOuts = outs;
        std::sort(sortedIns.begin(), sortedIns.end());
        std::sort(sortedOuts.begin(), sortedOuts.end());
        if (sortedIns != bindings.inputs || sortedOuts != bindings.outputs)
        {
            Fail(kLoadError, "SerializedGraph inputIds/outputIds do not match the network's Input/Output layers");
        }
        bindings.inputs = ins;
        bindings.outputs = outs;
    }

    // ---- optimize + load
    SetStage("optimize", kLoadError);
    armnn::IRuntime::CreationOptions options;
    armnn::IRuntimePtr runtime = armnn::IRuntime::Create(options);
    armnn::IOptimizedNetworkPtr optNet(nullptr, nullptr);
    std::vector<std::string> messages;
    try
    {
#if ARMNN_MAJOR_VERSION >= 33
        const armnn::OptimizerOptionsOpaque optimizerOptions;
#else
        const armnn::OptimizerOptions optimizerOptions;
#endif
        optNet = armnn::Optimize(*network, {armnn::Compute::CpuRef}, runtime->GetDeviceSpec(), optimizerOptions,
                                 armnn::Optional<std::vector<std::string>&>(messages));
    }
    catch (const std::exception& e)
    {
        std::string extra;
        for (const auto& m : messages)
        {
            extra += "; " + m;
        }
        Fail(kLoadError, std::string("optimize failed: ") + e.what() + extra);
    }
    if (!optNet)
    {
        std::string extra;
        for (const auto& m : messages)
        {
            extra += "; " + m;
        }
        Fail(kLoadError, "optimize failed for CpuRef" + extra);
    }
    if (!dotPath.empty())
    {
        std::ofstream dot(dotPath);
        optNet->SerializeToDot(dot);
    }

    SetStage("load", kLoadError);
    armnn::NetworkId netId = 0;
    try
    {
        std::string err;
        if (runtime->LoadNetwork(netId, std::move(optNet), err) != armnn::Status::Success)
        {
            Fail(kLoadError, "LoadNetwork failed: " + err);
        }
    }
    catch (const Failure&)
    {
        throw;
    }
    catch (const std::exception& e)
    {
        Fail(kLoadError, std::string("LoadNetwork failed: ") + e.what());
    }

    if (layers)
    {
        for (size_t i = 0; i < bindings.inputs.size(); ++i)
        {
            std::cout << "input " << i << " binding=" << bindings.inputs[i] << " "
                      << TensorInfoStr(runtime->GetInputTensorInfo(netId, bindings.inputs[i])) << "\n";
        }
        for (size_t i = 0; i < bindings.outputs.size(); ++i)
        {
            std::cout << "output " << i << " binding=" << bindings.outputs[i] << " "
                      << TensorInfoStr(runtime->GetOutputTensorInfo(netId, bindings.outputs[i])) << "\n";
        }
    }

    // ---- bind inputs
    if (inputArrays.size() != bindings.inputs.size())
    {
        Fail(kUsageError, "network has " + std::to_string(bindings.inputs.size()) + " input(s) but " +
                          std::to_string(inputArrays.size()) + " .npy file(s) were given");
    }
    armnn::InputTensors inputTensors;
    for (size_t i = 0; i < inputArrays.size(); ++i)
    {
        armnn::LayerBindingId id = bindings.inputs[i];
        armnn::TensorInfo info = runtime->GetInputTensorInfo(netId, id);
        const NpyArray& arr = inputArrays[i];
        std::string want = DescrFor(info.GetDataType());
        if (want.empty())
        {
            Fail(kUsageError, "input " + std::to_string(i) + " (binding id " + std::to_string(id) +
                              ") has unsupported data type " + armnn::GetDataTypeName(info.GetDataType()));
        }
        if (arr.descr != want)
        {
            Fail(kUsageError, "input " + std::to_string(i) + " (" + inputPaths[i] + "): dtype '" + arr.descr +
                              "' does not match the network input " + TensorInfoStr(info) + ", expected '" +
                              want + "'");
        }
        if (arr.shape != ShapeOf(info))
        {
            Fail(kUsageError, "input " + std::to_string(i) + " (" + inputPaths[i] + "): shape " +
                              ShapeStr(arr.shape) + " does not match the network input " + TensorInfoStr(info));
        }
        if (arr.data.size() < info.GetNumBytes())
        {
            Fail(kUsageError, "input " + std::to_string(i) + " (" + inputPaths[i] + "): truncated data (" +
                              std::to_string(arr.data.size()) + " bytes, need " +
                              std::to_string(info.GetNumBytes()) + ")");
        }
#if ARMNN_MAJOR_VERSION >= 33
        info.SetConstant(true);   // 23.08's ConstTensor refuses a TensorInfo not marked constant
#endif
        inputTensors.emplace_back(id, armnn::ConstTensor(info, arr.data.data()));
    }

    // ---- outputs
    std::vector<std::vector<char>> outputBuffers;
    std::vector<armnn::TensorInfo> outputInfos;
    armnn::OutputTensors outputTensors;
    for (armnn::LayerBindingId id : bindings.outputs)
    {
        armnn::TensorInfo info = runtime->GetOutputTensorInfo(netId, id);
        outputInfos.push_back(info);
        outputBuffers.emplace_back(std::max<size_t>(info.GetNumBytes(), 1));
    }
    for (size_t i = 0; i < bindings.outputs.size(); ++i)
    {
        outputTensors.emplace_back(bindings.outputs[i], armnn::Tensor(outputInfos[i], outputBuffers[i].data()));
    }

    // ---- run
    SetStage("inference", kRuntimeError);
    double totalMs = 0.0;
    for (int r = 0; r < repeat; ++r)
    {
        auto t0 = std::chrono::steady_clock::now();
        armnn::Status status;
        try
        {
            status = runtime->EnqueueWorkload(netId, inputTensors, outputTensors);
        }
        catch (const std::exception& e)
        {
            Fail(kRuntimeError, std::string("EnqueueWorkload failed: ") + e.what());
        }
        auto t1 = std::chrono::steady_clock::now();
        if (status != armnn::Status::Success)
        {
            Fail(kRuntimeError, "EnqueueWorkload returned failure");
        }
        totalMs += std::chrono::duration<double, std::milli>(t1 - t0).count();
    }

    SetStage("writing outputs", kRuntimeError);
    for (size_t i = 0; i < outputInfos.size(); ++i)
    {
        const armnn::TensorInfo& info = outputInfos[i];
        std::string descr = DescrFor(info.GetDataType());
        if (descr.empty())
        {
            Fail(kRuntimeError, "output " + std::to_string(i) + " has unsupported data type " +
                                armnn::GetDataTypeName(info.GetDataType()));
        }
        WriteNpy(outDir + "/output_" + std::to_string(i) + ".npy", descr, ShapeOf(info),
                 outputBuffers[i].data(), info.GetNumBytes());
    }
    if (timing)
    {
        char buf[64];
        snprintf(buf, sizeof(buf), "%.6f", totalMs / repeat);
        std::cout << "time_ms=" << buf << std::endl;
    }
    std::cout.flush();
    return kOk;
}

} // namespace

// assert() inside the compiled deserializer / flatbuffers headers (we build without NDEBUG so that
// out-of-range reads abort instead of reading garbage) ends up here: report it as one line and
// exit with the code of the current stage instead of glibc's message + SIGABRT.
extern "C" void __assert_fail(const char* assertion, const char* file, unsigned int line,
                              const char* function) __THROW
{
    (void)function;
    char buf[768];
    snprintf(buf, sizeof(buf), "armnn-run: error: assertion failed during %s: %s (%s:%u)\n", g_StageName,
             assertion, file, line);
    WriteStderr(buf);
    _exit(g_StageCode);
}

int main(int argc, char** argv)
{
    for (int sig : {SIGABRT, SIGSEGV, SIGFPE, SIGBUS, SIGILL})
    {
        std::signal(sig, OnFatalSignal);
    }
    try
    {
        return Run(argc, argv);
    }
    catch (const Failure& f)
    {
        std::cerr << "armnn-run: error: " << OneLine(f.message) << std::endl;
        return f.code;
    }
    catch (const std::exception& e)
    {
        std::cerr << "armnn-run: error: " << OneLine(e.what()) << std::endl;
        return g_StageCode;
    }
    catch (...)
    {
        std::cerr << "armnn-run: error: unknown exception during " << g_StageName << std::endl;
        return g_StageCode;
    }
}

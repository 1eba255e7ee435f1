// armnn-tflite-anchor: convert a .tflite model to a serialized Arm NN (.armnn) file with
// Arm NN 20.08's own packaged TfLite parser (libarmnnTfLiteParser) and serializer
// (libarmnnSerializer). The result is a reference ("anchor") for what Arm NN itself produces.
//
// Usage: armnn-tflite-anchor IN.tflite OUT.armnn
//
// Exit codes: 0 success; 1 the TfLite parser or the serializer failed; 2 usage / file errors.
// Every error is one line on stderr: "armnn-tflite-anchor: error: ...".

#include <armnn/ArmNN.hpp>
#include <armnn/INetwork.hpp>
#include <armnnSerializer/ISerializer.hpp>
#include <armnnTfLiteParser/ITfLiteParser.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

namespace
{
std::string OneLine(std::string s)
{
    for (char& c : s)
    {
        if (c == '\n' || c == '\r')
        {
            c = ' ';
        }
    }
    return s;
}

int Error(int code, const std::string& msg)
{
    std::cerr << "armnn-tflite-anchor: error: " << OneLine(msg) << std::endl;
    return code;
}
} // namespace

int main(int argc, char** argv)
{
    if (argc != 3)
    {
        std::cerr << "usage: armnn-tflite-anchor IN.tflite OUT.armnn\n";
        return Error(2, "expected 2 arguments");
    }
    const std::string inPath = argv[1];
    const std::string outPath = argv[2];
    {
        std::ifstream probe(inPath, std::ios::binary);
        if (!probe)
        {
            return Error(2, "cannot open " + inPath);
        }
    }

    armnn::INetworkPtr network(nullptr, nullptr);
    try
    {
        auto parser = armnnTfLiteParser::ITfLiteParser::Create();
        network = parser->CreateNetworkFromBinaryFile(inPath.c_str());
    }
    catch (const std::exception& e)
    {
        return Error(1, std::string("TfLite parser failed: ") + e.what());
    }
    if (!network)
    {
        return Error(1, "TfLite parser returned no network");
    }

    try
    {
        auto serializer = armnnSerializer::ISerializer::Create();
        serializer->Serialize(*network);
        std::ofstream out(outPath, std::ios::binary);
        if (!out)
        {
            return Error(2, "cannot write " + outPath);
        }
        if (!serializer->SaveSerializedToStream(out))
        {
            return Error(1, "serializer could not write the network");
        }
        out.close();
        if (!out)
        {
            return Error(2, "cannot write " + outPath);
        }
    }
    catch (const std::exception& e)
    {
        std::remove(outPath.c_str());
        return Error(1, std::string("serializer failed: ") + e.what());
    }
    return 0;
}

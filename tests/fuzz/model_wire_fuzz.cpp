// A model as the worker receives it over gRPC (StageAssignment.model, ProfileRequest.model):
// protobuf bytes -> v1::Model -> ModelSpec. Binary mutation reaches the numeric
// hyper-parameters far sooner than JSON text does (model_json).

#include "fuzz_support.h"
#include "model/model_spec.h"
#include "stagecraft/v1/model.pb.h"

using namespace stagecraft;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quietProtobuf();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  v1::Model proto;
  if (size > (1u << 20) || !proto.ParseFromArray(data, static_cast<int>(size))) return 0;
  fuzz::refusingBadInput([&] {
    const ModelSpec spec = ModelSpec::fromProto(proto);
    for (int i = 0; i < spec.layerCount(); ++i) {
      for (int d : spec.cost(i).output_shape) fuzz::require(d > 0, "output dimensions are positive");
    }
  });
  return 0;
}

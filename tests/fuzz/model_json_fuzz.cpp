// A model file (stagecraft-cli --model FILE.json, a plan's embedded model_spec): JSON ->
// v1::Model -> ModelSpec, which derives every layer's cost and output shape.

#include "fuzz_support.h"
#include "io/json_io.h"
#include "model/model_spec.h"
#include "stagecraft/v1/model.pb.h"

using namespace stagecraft;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::refusingBadInput([&] {
    v1::Model proto;
    io::parseJson(fuzz::textOf(data, size), proto, "model");
    const ModelSpec spec = ModelSpec::fromProto(proto);
    const int layers = spec.layerCount();
    fuzz::require(layers == proto.layers_size(), "every layer is costed");
    for (int i = 0; i < layers; ++i) {
      for (int d : spec.cost(i).output_shape) fuzz::require(d > 0, "output dimensions are positive");
      fuzz::require(spec.cost(i).forward_flops >= 0 && spec.cost(i).parameters >= 0 &&
                        spec.cost(i).saved_bytes >= 0,
                    "costs are not negative");
    }
    (void)spec.forwardFlops(0, layers);
    (void)spec.inputBytes();
  });
  return 0;
}

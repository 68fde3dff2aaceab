// podsim.data: datasets, the host DataLoader and the device-prefetching DeviceLoader
// (torch_xla's MpDeviceLoader), iterable as in Python. A batch is a list of tensors.
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "python/src/bindings.h"
#include "runtime/data/char_text.h"
#include "runtime/data/data_loader.h"
#include "runtime/data/datasets.h"
#include "runtime/data/device_loader.h"

namespace podsim::python {

void bind_data(py::module_& m) {
  using namespace data;
  py::module_ d = m.def_submodule("data", "Datasets and loaders (torch.utils.data, torch_xla's MpDeviceLoader)");

  py::class_<Dataset, std::shared_ptr<Dataset>>(d, "Dataset")
      .def("__len__", &Dataset::size)
      .def("__getitem__", [](const Dataset& self, int64_t i) {
        if (i < 0) i += self.size();
        if (i < 0 || i >= self.size()) throw py::index_error("dataset index out of range");
        return self.get(i);
      });
  py::class_<TensorDataset, Dataset, std::shared_ptr<TensorDataset>>(d, "TensorDataset")
      .def(py::init([](py::args tensors) { return std::make_shared<TensorDataset>(tensors.cast<std::vector<Tensor>>()); }))
      .def_property_readonly("tensors", &TensorDataset::tensors);
  d.def("load_digits", [](const std::string& path) { return std::make_shared<TensorDataset>(load_digits(path)); },
        py::arg("path") = kDigitsPath, "scikit-learn's 8x8 digits: (f32 [1797, 64] pixels 0..16, s64 [1797] labels)");
  d.def("train_test_split", [](const TensorDataset& dataset, double test_fraction, uint64_t seed) {
    auto [train, test] = train_test_split(dataset, test_fraction, seed);
    return py::make_tuple(std::make_shared<TensorDataset>(std::move(train)), std::make_shared<TensorDataset>(std::move(test)));
  }, py::arg("dataset"), py::arg("test_size"), py::arg("seed") = 0);

  d.def("load_text_corpus", [](const std::string& path) {
    TextCorpus corpus = load_text_corpus(path);
    return py::make_tuple(corpus.text, corpus.source);
  }, py::arg("path") = kDefaultCorpusPath, "(text, source): the GPL-3 text every Debian has, or generated text");
  py::class_<CharTextDataset, Dataset, std::shared_ptr<CharTextDataset>>(d, "CharTextDataset")
      .def(py::init([](const std::string& text, int64_t block) { return std::make_shared<CharTextDataset>(text, block); }),
           py::arg("text"), py::arg("block_size"),
           "Windows of block_size characters as ids (input) and the next characters (target)")
      .def_property_readonly("vocab_size", &CharTextDataset::vocab_size)
      .def_property_readonly("vocabulary", &CharTextDataset::vocabulary)
      .def_property_readonly("block_size", &CharTextDataset::block_size)
      .def("encode", &CharTextDataset::encode)
      .def("decode", [](const CharTextDataset& self, const std::vector<int64_t>& ids) { return self.decode(ids); });

  py::class_<DataLoader>(d, "DataLoader")
      .def(py::init([](std::shared_ptr<Dataset> dataset, int64_t batch_size, bool shuffle, uint64_t seed, bool drop_last,
                       int64_t replicas, int64_t rank) {
             return DataLoader(std::move(dataset), {batch_size, shuffle, seed, drop_last, replicas, rank});
           }), py::arg("dataset"), py::arg("batch_size") = 1, py::arg("shuffle") = false, py::kw_only(),
           py::arg("seed") = 0, py::arg("drop_last") = false, py::arg("num_replicas") = 1, py::arg("rank") = 0)
      .def("__len__", &DataLoader::num_batches)
      .def("__iter__", [](DataLoader& self) { return py::make_iterator(self.begin(), self.end()); }, py::keep_alive<0, 1>(),
           "One epoch of batches (the next epoch's order on the next iteration)")
      .def("epoch_order", &DataLoader::epoch_order, py::arg("epoch"), "The example order of an epoch (0, 1, ...)")
      .def_property("epoch", &DataLoader::epoch, &DataLoader::set_epoch);

  py::class_<DeviceLoader>(d, "DeviceLoader")
      .def(py::init([](const DataLoader& loader, pjrt::Device& device, int64_t prefetch) {
             return std::make_unique<DeviceLoader>(loader, device, DeviceLoaderOptions{.prefetch = prefetch});
           }), py::arg("loader"), py::arg("device"), py::kw_only(), py::arg("prefetch") = 4, py::keep_alive<1, 3>())
      .def("__len__", &DeviceLoader::num_batches)
      .def("__iter__", [](DeviceLoader& self) -> DeviceLoader& {
        self.start_epoch();
        return self;
      })
      .def("__next__", [](DeviceLoader& self) {
        std::optional<Example> batch = [&] {
          py::gil_scoped_release release;
          return self.next();
        }();
        if (!batch) throw py::stop_iteration();
        return *batch;
      }, "The next device batch; marks the step first, as torch_xla's loader does");
}

}  // namespace podsim::python

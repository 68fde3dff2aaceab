// The device guard of torch's PrivateUse1 device type, which podsim.torch's tensors
// report as their device ("privateuseone:N"). torch 1.13 has no Python API to give that
// type a guard, and its autograd engine asks for one to run backward on such tensors;
// podsim devices have no streams or events of torch's kind, so the guard keeps only a
// current device index. podsim/torch.py loads this library after importing torch.
#include <c10/core/impl/DeviceGuardImplInterface.h>

namespace {

thread_local c10::DeviceIndex current_index = 0;

class PodsimDeviceGuard final : public c10::impl::DeviceGuardImplInterface {
 public:
  c10::DeviceType type() const override { return c10::DeviceType::PrivateUse1; }
  c10::Device exchangeDevice(c10::Device device) const override {
    c10::Device previous = getDevice();
    current_index = device.index();
    return previous;
  }
  c10::Device getDevice() const override { return c10::Device(c10::DeviceType::PrivateUse1, current_index); }
  void setDevice(c10::Device device) const override { current_index = device.index(); }
  void uncheckedSetDevice(c10::Device device) const noexcept override { current_index = device.index(); }
  c10::Stream getStream(c10::Device device) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, device);
  }
  c10::Stream exchangeStream(c10::Stream stream) const noexcept override { return stream; }
  c10::DeviceIndex deviceCount() const noexcept override { return 1; }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, PodsimDeviceGuard);

}  // namespace

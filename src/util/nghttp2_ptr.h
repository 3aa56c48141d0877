// unique_ptr aliases for nghttp2 objects, one stateless deleter per type.
#pragma once

#include <nghttp2/nghttp2.h>

#include <memory>

namespace tlsfront {

namespace detail {
template <typename T, void (*F)(T*)>
struct Nghttp2Deleter {
  void operator()(T* p) const noexcept { F(p); }
};
}  // namespace detail

using Nghttp2SessionPtr = std::unique_ptr<nghttp2_session, detail::Nghttp2Deleter<nghttp2_session, nghttp2_session_del>>;
using Nghttp2OptionPtr = std::unique_ptr<nghttp2_option, detail::Nghttp2Deleter<nghttp2_option, nghttp2_option_del>>;
using Nghttp2CallbacksPtr =
    std::unique_ptr<nghttp2_session_callbacks,
                    detail::Nghttp2Deleter<nghttp2_session_callbacks, nghttp2_session_callbacks_del>>;

}  // namespace tlsfront

#include "data/upstream/upstream_channel.h"

namespace tlsfront::upstream {

void UpstreamChannel::finish(std::unique_ptr<UpstreamChannel>& channel, bool request_whole) {
  if (!channel) return;
  channel->detach();
  if (channel->give_back(request_whole)) {
    (void)channel.release();  // its pool owns it now
    return;
  }
  retire(channel);
}

void UpstreamChannel::retire(std::unique_ptr<UpstreamChannel>& channel) {
  if (!channel) return;
  channel->detach();
  channel->close();
  uv_loop_t* loop = channel->loop_;
  LoopContext::of(loop).defer_delete(std::move(channel));
}

}  // namespace tlsfront::upstream

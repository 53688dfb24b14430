<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN" sourcelanguage="en">
<context>
    <name>DisplayUnits</name>
    <message>
        <location filename="../app/gui/editor/display_units.cpp" line="43"/>
        <source>%1 s</source>
        <translation>%1 s</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/display_units.cpp" line="44"/>
        <source>%1 ms</source>
        <translation>%1 ms</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/display_units.cpp" line="59"/>
        <source>cloud</source>
        <translation>云</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/display_units.cpp" line="60"/>
        <source>edge</source>
        <translation>边缘</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/display_units.cpp" line="61"/>
        <source>end</source>
        <translation>终端</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/display_units.cpp" line="64"/>
        <source>unknown</source>
        <translation>未知</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/display_units.cpp" line="73"/>
        <source>Convolution</source>
        <translation>卷积</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/display_units.cpp" line="74"/>
        <source>Fully connected</source>
        <translation>全连接</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/display_units.cpp" line="75"/>
        <source>Max pooling</source>
        <translation>最大池化</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/display_units.cpp" line="76"/>
        <source>Global average pooling</source>
        <translation>全局平均池化</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/display_units.cpp" line="77"/>
        <source>Residual block</source>
        <translation>残差块</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/display_units.cpp" line="78"/>
        <source>Inverted residual block</source>
        <translation>倒残差块</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/display_units.cpp" line="79"/>
        <source>Transformer block</source>
        <translation>Transformer 块</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/display_units.cpp" line="80"/>
        <source>Embedding</source>
        <translation>嵌入</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/display_units.cpp" line="81"/>
        <source>Language-model head</source>
        <translation>语言模型输出头</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/display_units.cpp" line="96"/>
        <source>profiled</source>
        <translation>基于性能剖析</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/display_units.cpp" line="97"/>
        <source>calibrated from training</source>
        <translation>按训练实测校准</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/display_units.cpp" line="100"/>
        <source>from specs</source>
        <translation>基于规格</translation>
    </message>
</context>
<context>
    <name>PartitionEditor</name>
    <message>
        <location filename="../app/gui/editor/partition_layout.cpp" line="136"/>
        <source>Unused devices</source>
        <translation>未使用的设备</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/partition_layout.cpp" line="38"/>
        <source>This plan cannot run:</source>
        <translation>此方案无法运行：</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/partition_layout.cpp" line="67"/>
        <source>Stage %1</source>
        <translation>阶段 %1</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/partition_layout.cpp" line="71"/>
        <source>no layers</source>
        <translation>无层</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/partition_layout.cpp" line="73"/>
        <source>layer %1 · %2 per micro-batch</source>
        <translation>层 %1 · 每微批次 %2</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/partition_layout.cpp" line="77"/>
        <source>layers %1–%2 · %3 per micro-batch</source>
        <translation>层 %1–%2 · 每微批次 %3</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/partition_layout.cpp" line="85"/>
        <location filename="../app/gui/editor/partition_layout.cpp" line="116"/>
        <source>%1 · bottleneck</source>
        <translation>%1 · 瓶颈</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/partition_layout.cpp" line="93"/>
        <source>%1 ×%2</source>
        <translation>%1 ×%2</translation>
    </message>
</context>
<context>
    <name>PlanEdits</name>
    <message>
        <location filename="../app/gui/editor/plan_edits.cpp" line="65"/>
        <source>There is no boundary after stage %1.</source>
        <translation>阶段 %1 之后没有边界。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_edits.cpp" line="71"/>
        <source>Stage %1 and stage %2 must each keep at least one layer.</source>
        <translation>阶段 %1 和阶段 %2 都必须至少保留一层。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_edits.cpp" line="82"/>
        <location filename="../app/gui/editor/plan_edits.cpp" line="115"/>
        <location filename="../app/gui/editor/plan_edits.cpp" line="205"/>
        <source>There is no stage %1.</source>
        <translation>不存在阶段 %1。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_edits.cpp" line="83"/>
        <source>No layers to move.</source>
        <translation>没有要移动的层。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_edits.cpp" line="87"/>
        <source>Layer %1 is not in the model.</source>
        <translation>层 %1 不在模型中。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_edits.cpp" line="90"/>
        <source>The layers are already in stage %1.</source>
        <translation>这些层已在阶段 %1 中。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_edits.cpp" line="95"/>
        <location filename="../app/gui/editor/plan_edits.cpp" line="104"/>
        <source>Layers can only move to an adjacent stage; stage %1 does not border them.</source>
        <translation>层只能移动到相邻阶段；阶段 %1 与它们不相邻。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_edits.cpp" line="98"/>
        <location filename="../app/gui/editor/plan_edits.cpp" line="107"/>
        <source>Stage %1 would have no layers left.</source>
        <translation>阶段 %1 将不再有任何层。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_edits.cpp" line="111"/>
        <source>The layers straddle stage %1; drop layers of one neighbouring stage.</source>
        <translation>这些层跨越了阶段 %1；请只拖放某一个相邻阶段的层。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_edits.cpp" line="116"/>
        <location filename="../app/gui/editor/plan_edits.cpp" line="139"/>
        <source>The device is not in the cluster.</source>
        <translation>该设备不在集群中。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_edits.cpp" line="120"/>
        <source>Device %1 is already in stage %2.</source>
        <translation>设备 %1 已在阶段 %2 中。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_edits.cpp" line="125"/>
        <source>Device %1 is the only device of stage %2; a stage needs at least one device.</source>
        <translation>设备 %1 是阶段 %2 中唯一的设备；每个阶段至少需要一台设备。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_edits.cpp" line="142"/>
        <source>Device %1 is not in any stage.</source>
        <translation>设备 %1 不属于任何阶段。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_edits.cpp" line="147"/>
        <source>Device %1 is the only device of stage %2; remove the stage instead.</source>
        <translation>设备 %1 是阶段 %2 中唯一的设备；请改为移除该阶段。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_edits.cpp" line="166"/>
        <source>Every stage holds a single layer; there is nothing to split.</source>
        <translation>每个阶段都只有一层；没有可拆分的内容。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_edits.cpp" line="177"/>
        <source>No device is unused and stage %1 has a single device; free a device first.</source>
        <translation>没有未使用的设备，且阶段 %1 只有一台设备；请先释放一台设备。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_edits.cpp" line="206"/>
        <source>A plan needs at least one stage.</source>
        <translation>方案至少需要一个阶段。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_edits.cpp" line="220"/>
        <source>The batch and the micro-batch count must be positive.</source>
        <translation>批次大小和微批次数必须为正数。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_edits.cpp" line="222"/>
        <source>A batch of %1 samples does not divide into %2 micro-batches.</source>
        <translation>%1 个样本的批次无法均分为 %2 个微批次。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_edits.cpp" line="232"/>
        <source>Unknown schedule.</source>
        <translation>未知的调度方式。</translation>
    </message>
</context>
<context>
    <name>main</name>
    <message>
        <location filename="../app/gui/main.cpp" line="46"/>
        <source>Plan, run and watch hybrid-pipeline training on heterogeneous edge devices.</source>
        <translation>在异构边缘设备上规划、运行并监视混合流水线训练。</translation>
    </message>
    <message>
        <location filename="../app/gui/main.cpp" line="51"/>
        <source>Open the cluster &lt;file&gt; (or a shipped cluster&apos;s name).</source>
        <translation>打开集群 &lt;文件&gt;（或内置集群的名称）。</translation>
    </message>
    <message>
        <location filename="../app/gui/main.cpp" line="52"/>
        <location filename="../app/gui/main.cpp" line="55"/>
        <location filename="../app/gui/main.cpp" line="73"/>
        <location filename="../app/gui/main.cpp" line="76"/>
        <source>file</source>
        <translation>文件</translation>
    </message>
    <message>
        <location filename="../app/gui/main.cpp" line="54"/>
        <source>Open the plan &lt;file&gt;.</source>
        <translation>打开方案 &lt;文件&gt;。</translation>
    </message>
    <message>
        <location filename="../app/gui/main.cpp" line="57"/>
        <source>Select the model &lt;name&gt; from the zoo, or a TorchScript file whose sample shape was given before.</source>
        <translation>从模型库中选择模型 &lt;名称&gt;，或选择之前已给出样本形状的 TorchScript 文件。</translation>
    </message>
    <message>
        <location filename="../app/gui/main.cpp" line="58"/>
        <source>name</source>
        <translation>名称</translation>
    </message>
    <message>
        <location filename="../app/gui/main.cpp" line="60"/>
        <source>User interface language, e.g. zh_CN.</source>
        <translation>界面语言，例如 zh_CN。</translation>
    </message>
    <message>
        <location filename="../app/gui/main.cpp" line="61"/>
        <source>locale</source>
        <translation>区域设置</translation>
    </message>
    <message>
        <location filename="../app/gui/main.cpp" line="64"/>
        <source>Listen for worker beacons on UDP &lt;port&gt; (default %1).</source>
        <translation>在 UDP &lt;端口&gt; 上监听工作节点信标（默认 %1）。</translation>
    </message>
    <message>
        <location filename="../app/gui/main.cpp" line="66"/>
        <source>port</source>
        <translation>端口</translation>
    </message>
    <message>
        <location filename="../app/gui/main.cpp" line="69"/>
        <source>The cluster token workers ask for, in a private &lt;file&gt; (default: $%1, else the last session&apos;s, else the one local workers get).</source>
        <translation>工作节点要求的集群令牌，保存在私有 &lt;file&gt; 中（默认：$%1，其次为上次会话所用的文件，再次为本地工作节点的令牌）。</translation>
    </message>
    <message>
        <location filename="../app/gui/main.cpp" line="80"/>
        <source>This console&apos;s certificate &lt;file&gt;, signed by the cluster CA, for workers started with --tls-* (default: $%1, else the last session&apos;s).</source>
        <translation>本控制台的证书 &lt;file&gt;，由集群 CA 签发，用于以 --tls-* 启动的工作节点（默认：$%1，其次为上次会话所用的）。</translation>
    </message>
    <message>
        <location filename="../app/gui/main.cpp" line="84"/>
        <source>The certificate&apos;s private key &lt;file&gt;, mode 0600 (default: $%1).</source>
        <translation>该证书的私钥 &lt;file&gt;，权限须为 0600（默认：$%1）。</translation>
    </message>
    <message>
        <location filename="../app/gui/main.cpp" line="88"/>
        <source>The cluster CA&apos;s certificate &lt;file&gt;, which signed the workers&apos; (default: $%1).</source>
        <translation>集群 CA 的证书 &lt;file&gt;，工作节点的证书由它签发（默认：$%1）。</translation>
    </message>
    <message>
        <location filename="../app/gui/main.cpp" line="106"/>
        <source>--beacon-port takes a port between 1 and 65535.</source>
        <translation>--beacon-port 需要 1 到 65535 之间的端口号。</translation>
    </message>
</context>
<context>
    <name>stagecraft::gui::BeaconDiscovery</name>
    <message>
        <location filename="../app/gui/live/beacon_discovery.cpp" line="21"/>
        <source>Cannot listen for worker beacons on UDP port %1: %2</source>
        <translation>无法在 UDP 端口 %1 上监听工作节点信标：%2</translation>
    </message>
</context>
<context>
    <name>stagecraft::gui::ChartFeed</name>
    <message>
        <location filename="../app/gui/live/chart_feed.cpp" line="27"/>
        <source>%1 lost</source>
        <translation>%1 已丢失</translation>
    </message>
    <message>
        <location filename="../app/gui/live/chart_feed.cpp" line="35"/>
        <source>back %1 s after losing %2</source>
        <translation>丢失 %2 后 %1 秒恢复</translation>
    </message>
</context>
<context>
    <name>stagecraft::gui::ChartPlot</name>
    <message>
        <location filename="../app/gui/live/chart_plot.cpp" line="104"/>
        <source>PNG image (*.png)</source>
        <translation>PNG 图像 (*.png)</translation>
    </message>
    <message>
        <location filename="../app/gui/live/chart_plot.cpp" line="105"/>
        <source>PDF document (*.pdf)</source>
        <translation>PDF 文档 (*.pdf)</translation>
    </message>
    <message>
        <location filename="../app/gui/live/chart_plot.cpp" line="117"/>
        <source>Export Chart</source>
        <translation>导出图表</translation>
    </message>
    <message>
        <location filename="../app/gui/live/chart_plot.cpp" line="124"/>
        <source>Follow Latest</source>
        <translation>跟随最新</translation>
    </message>
    <message>
        <location filename="../app/gui/live/chart_plot.cpp" line="130"/>
        <source>Export Chart…</source>
        <translation>导出图表…</translation>
    </message>
</context>
<context>
    <name>stagecraft::gui::CompareModel</name>
    <message>
        <location filename="../app/gui/models/compare_model.cpp" line="49"/>
        <source>yes</source>
        <translation>是</translation>
    </message>
    <message>
        <location filename="../app/gui/models/compare_model.cpp" line="49"/>
        <source>no</source>
        <translation>否</translation>
    </message>
    <message>
        <location filename="../app/gui/models/compare_model.cpp" line="58"/>
        <source>%1 %</source>
        <translation>%1 %</translation>
    </message>
    <message>
        <location filename="../app/gui/models/compare_model.cpp" line="59"/>
        <source>%1×</source>
        <translation>%1×</translation>
    </message>
    <message>
        <location filename="../app/gui/models/compare_model.cpp" line="89"/>
        <source>Planner %1 has no plan: %2</source>
        <translation>规划器 %1 没有方案：%2</translation>
    </message>
    <message>
        <location filename="../app/gui/models/compare_model.cpp" line="90"/>
        <source>Planner %1: %2 stages on %3 devices, %4 micro-batches, %5 samples/s predicted by the simulator.</source>
        <translation>规划器 %1：%2 个阶段，%3 台设备，%4 个微批次，模拟器预测 %5 样本/秒。</translation>
    </message>
    <message>
        <location filename="../app/gui/models/compare_model.cpp" line="105"/>
        <source>Planner</source>
        <translation>规划器</translation>
    </message>
    <message>
        <location filename="../app/gui/models/compare_model.cpp" line="106"/>
        <source>Feasible</source>
        <translation>可行</translation>
    </message>
    <message>
        <location filename="../app/gui/models/compare_model.cpp" line="107"/>
        <source>Stages</source>
        <translation>阶段数</translation>
    </message>
    <message>
        <location filename="../app/gui/models/compare_model.cpp" line="108"/>
        <source>Micro-batches</source>
        <translation>微批次数</translation>
    </message>
    <message>
        <location filename="../app/gui/models/compare_model.cpp" line="109"/>
        <source>Samples/s</source>
        <translation>样本/秒</translation>
    </message>
    <message>
        <location filename="../app/gui/models/compare_model.cpp" line="110"/>
        <source>Iteration</source>
        <translation>迭代时间</translation>
    </message>
    <message>
        <location filename="../app/gui/models/compare_model.cpp" line="111"/>
        <source>Bubble</source>
        <translation>气泡</translation>
    </message>
    <message>
        <location filename="../app/gui/models/compare_model.cpp" line="112"/>
        <source>vs best</source>
        <translation>相对最优</translation>
    </message>
    <message>
        <location filename="../app/gui/models/compare_model.cpp" line="113"/>
        <source>Plan time</source>
        <translation>规划耗时</translation>
    </message>
    <message>
        <location filename="../app/gui/models/compare_model.cpp" line="114"/>
        <source>Reason</source>
        <translation>原因</translation>
    </message>
</context>
<context>
    <name>stagecraft::gui::DeviceChart</name>
    <message>
        <location filename="../app/gui/live/device_chart.cpp" line="51"/>
        <source>%1 / %2</source>
        <translation>%1 / %2</translation>
    </message>
    <message>
        <location filename="../app/gui/live/device_chart.cpp" line="59"/>
        <source>Utilisation</source>
        <translation>利用率</translation>
    </message>
    <message>
        <location filename="../app/gui/live/device_chart.cpp" line="60"/>
        <source>Memory</source>
        <translation>内存</translation>
    </message>
    <message>
        <location filename="../app/gui/live/device_chart.cpp" line="87"/>
        <source>Busy (%)</source>
        <translation>忙碌 (%)</translation>
    </message>
    <message>
        <location filename="../app/gui/live/device_chart.cpp" line="88"/>
        <source>Memory (% of limit)</source>
        <translation>内存 (占上限 %)</translation>
    </message>
    <message>
        <location filename="../app/gui/live/device_chart.cpp" line="214"/>
        <location filename="../app/gui/live/device_chart.cpp" line="224"/>
        <source>%1 %</source>
        <translation>%1 %</translation>
    </message>
</context>
<context>
    <name>stagecraft::gui::DeviceModel</name>
    <message>
        <location filename="../app/gui/models/device_model_display.cpp" line="69"/>
        <source>reachable</source>
        <translation>可达</translation>
    </message>
    <message>
        <location filename="../app/gui/models/device_model_display.cpp" line="70"/>
        <source>busy</source>
        <translation>忙碌</translation>
    </message>
    <message>
        <location filename="../app/gui/models/device_model_display.cpp" line="71"/>
        <source>lost</source>
        <translation>失联</translation>
    </message>
    <message>
        <location filename="../app/gui/models/device_model_display.cpp" line="74"/>
        <source>unknown</source>
        <translation>未知</translation>
    </message>
    <message>
        <location filename="../app/gui/models/device_model_display.cpp" line="80"/>
        <source>training</source>
        <translation>训练中</translation>
    </message>
    <message>
        <location filename="../app/gui/models/device_model_display.cpp" line="80"/>
        <source>idle, job deployed</source>
        <translation>空闲，作业已部署</translation>
    </message>
    <message>
        <location filename="../app/gui/models/device_model_display.cpp" line="82"/>
        <source>stopped</source>
        <translation>已停止</translation>
    </message>
    <message>
        <location filename="../app/gui/models/device_model_display.cpp" line="83"/>
        <source>heard, unconfirmed</source>
        <translation>已听到，未确认</translation>
    </message>
    <message>
        <location filename="../app/gui/models/device_model_display.cpp" line="91"/>
        <source>Warning: this worker was started with --insecure and answers every caller: anyone who reaches it can deploy, train, read or overwrite its model. Start it with --token-file.</source>
        <translation>警告：此工作节点以 --insecure 启动，会响应任何调用者：任何能连到它的人都可以部署、训练、读取或覆盖它的模型。请用 --token-file 启动它。</translation>
    </message>
    <message>
        <location filename="../app/gui/models/device_model_display.cpp" line="100"/>
        <source>The worker of %1 at %2 answers and is idle (%3 cores, version %4).</source>
        <translation>设备 %1 的工作节点（%2）有响应且空闲（%3 核，版本 %4）。</translation>
    </message>
    <message>
        <location filename="../app/gui/models/device_model_display.cpp" line="106"/>
        <source>The worker of %1 at %2 is training job %3.</source>
        <translation>设备 %1 的工作节点（%2）正在训练作业 %3。</translation>
    </message>
    <message>
        <location filename="../app/gui/models/device_model_display.cpp" line="107"/>
        <source>The worker of %1 at %2 has job %3 deployed.</source>
        <translation>设备 %1 的工作节点（%2）已部署作业 %3。</translation>
    </message>
    <message>
        <location filename="../app/gui/models/device_model_display.cpp" line="109"/>
        <source>The worker of %1 at %2 stopped answering: %3</source>
        <translation>设备 %1 的工作节点（%2）已停止响应：%3</translation>
    </message>
    <message>
        <location filename="../app/gui/models/device_model_display.cpp" line="112"/>
        <source>Device %1 has no worker address.</source>
        <translation>设备 %1 没有工作节点地址。</translation>
    </message>
    <message>
        <location filename="../app/gui/models/device_model_display.cpp" line="113"/>
        <source>The worker of %1 at %2 was stopped from this console.</source>
        <translation>位于 %2 的 %1 工作节点已由本控制台停止。</translation>
    </message>
    <message>
        <location filename="../app/gui/models/device_model_display.cpp" line="115"/>
        <source>A beacon announced %1 at %2, but its worker has not answered Describe yet: a beacon is a hint anyone on the network can send, so it cannot be planned on until then.</source>
        <translation>信标宣告 %1 位于 %2，但其工作节点尚未应答 Describe：信标只是网络上任何人都能发送的提示，在此之前不能用于规划。</translation>
    </message>
    <message>
        <location filename="../app/gui/models/device_model_display.cpp" line="119"/>
        <source>The worker of %1 has not answered: %2</source>
        <translation>设备 %1 的工作节点未响应：%2</translation>
    </message>
    <message>
        <location filename="../app/gui/models/device_model_display.cpp" line="120"/>
        <source>The worker of %1 at %2 has not been asked yet.</source>
        <translation>尚未查询设备 %1 的工作节点（%2）。</translation>
    </message>
    <message>
        <location filename="../app/gui/models/device_model_display.cpp" line="167"/>
        <source>Device</source>
        <translation>设备</translation>
    </message>
    <message>
        <location filename="../app/gui/models/device_model_display.cpp" line="168"/>
        <source>Tier</source>
        <translation>层级</translation>
    </message>
    <message>
        <location filename="../app/gui/models/device_model_display.cpp" line="169"/>
        <source>GFLOP/s</source>
        <translation>GFLOP/s</translation>
    </message>
    <message>
        <location filename="../app/gui/models/device_model_display.cpp" line="170"/>
        <source>Memory</source>
        <translation>内存</translation>
    </message>
    <message>
        <location filename="../app/gui/models/device_model_display.cpp" line="171"/>
        <source>Address</source>
        <translation>地址</translation>
    </message>
    <message>
        <location filename="../app/gui/models/device_model_display.cpp" line="172"/>
        <source>Status</source>
        <translation>状态</translation>
    </message>
    <message>
        <location filename="../app/gui/models/device_model_display.cpp" line="173"/>
        <source>Stage</source>
        <translation>阶段</translation>
    </message>
    <message>
        <location filename="../app/gui/models/device_model.cpp" line="113"/>
        <source>%1 is not a worker address: give host:port, e.g. 192.168.1.20:50051.</source>
        <translation>%1 不是有效的工作节点地址：请使用 host:port 格式，例如 192.168.1.20:50051。</translation>
    </message>
    <message>
        <location filename="../app/gui/models/device_model.cpp" line="122"/>
        <source>No worker answers at %1: %2</source>
        <translation>%1 处没有工作节点响应：%2</translation>
    </message>
</context>
<context>
    <name>stagecraft::gui::LayerTableModel</name>
    <message>
        <location filename="../app/gui/models/layer_table_model.cpp" line="77"/>
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <location filename="../app/gui/models/layer_table_model.cpp" line="101"/>
        <source>Layer %1 “%2” (%3): output %4, forward %5 and backward %6 per sample, %7 parameters, %8 of activation per sample. Drag it onto a neighbouring stage to move it there.</source>
        <translation>第 %1 层“%2”（%3）：输出 %4，每样本前向 %5、反向 %6，%7 个参数，每样本激活 %8。将其拖到相邻阶段即可移入该阶段。</translation>
    </message>
    <message>
        <location filename="../app/gui/models/layer_table_model.cpp" line="114"/>
        <source>#</source>
        <translation>#</translation>
    </message>
    <message>
        <location filename="../app/gui/models/layer_table_model.cpp" line="115"/>
        <source>Layer</source>
        <translation>层</translation>
    </message>
    <message>
        <location filename="../app/gui/models/layer_table_model.cpp" line="116"/>
        <source>Kind</source>
        <translation>类型</translation>
    </message>
    <message>
        <location filename="../app/gui/models/layer_table_model.cpp" line="117"/>
        <source>Output</source>
        <translation>输出</translation>
    </message>
    <message>
        <location filename="../app/gui/models/layer_table_model.cpp" line="118"/>
        <source>Forward FLOPs</source>
        <translation>前向 FLOPs</translation>
    </message>
    <message>
        <location filename="../app/gui/models/layer_table_model.cpp" line="119"/>
        <source>Parameters</source>
        <translation>参数</translation>
    </message>
    <message>
        <location filename="../app/gui/models/layer_table_model.cpp" line="120"/>
        <source>Activation</source>
        <translation>激活</translation>
    </message>
    <message>
        <location filename="../app/gui/models/layer_table_model.cpp" line="121"/>
        <source>Stage</source>
        <translation>阶段</translation>
    </message>
    <message>
        <location filename="../app/gui/models/layer_table_model.cpp" line="127"/>
        <source>Forward FLOPs per sample (a multiply-add counts as two).</source>
        <translation>每样本的前向 FLOPs（一次乘加计为两次）。</translation>
    </message>
    <message>
        <location filename="../app/gui/models/layer_table_model.cpp" line="128"/>
        <source>Trainable parameters.</source>
        <translation>可训练参数。</translation>
    </message>
    <message>
        <location filename="../app/gui/models/layer_table_model.cpp" line="129"/>
        <source>Activation handed to the next layer, per sample.</source>
        <translation>每样本传递给下一层的激活。</translation>
    </message>
    <message>
        <location filename="../app/gui/models/layer_table_model.cpp" line="130"/>
        <source>The pipeline stage that holds the layer.</source>
        <translation>持有该层的流水线阶段。</translation>
    </message>
</context>
<context>
    <name>stagecraft::gui::LiveCharts</name>
    <message>
        <location filename="../app/gui/live/live_charts.cpp" line="138"/>
        <source>Training Dashboard</source>
        <translation>训练仪表盘</translation>
    </message>
    <message>
        <location filename="../app/gui/live/live_charts.cpp" line="170"/>
        <source>Export Dashboard</source>
        <translation>导出仪表盘</translation>
    </message>
    <message>
        <location filename="../app/gui/live/live_charts.cpp" line="179"/>
        <source>Export Dashboard…</source>
        <translation>导出仪表盘…</translation>
    </message>
</context>
<context>
    <name>stagecraft::gui::LogModel</name>
    <message>
        <location filename="../app/gui/models/log_model.cpp" line="50"/>
        <source>Info</source>
        <translation>信息</translation>
    </message>
    <message>
        <location filename="../app/gui/models/log_model.cpp" line="52"/>
        <source>Warning</source>
        <translation>警告</translation>
    </message>
    <message>
        <location filename="../app/gui/models/log_model.cpp" line="54"/>
        <source>Error</source>
        <translation>错误</translation>
    </message>
    <message>
        <location filename="../app/gui/models/log_model.cpp" line="58"/>
        <source>Unknown</source>
        <translation>未知</translation>
    </message>
    <message>
        <location filename="../app/gui/models/log_model.cpp" line="161"/>
        <source>Time</source>
        <translation>时间</translation>
    </message>
    <message>
        <location filename="../app/gui/models/log_model.cpp" line="163"/>
        <source>Source</source>
        <translation>来源</translation>
    </message>
    <message>
        <location filename="../app/gui/models/log_model.cpp" line="165"/>
        <source>Level</source>
        <translation>级别</translation>
    </message>
    <message>
        <location filename="../app/gui/models/log_model.cpp" line="167"/>
        <source>Message</source>
        <translation>消息</translation>
    </message>
</context>
<context>
    <name>stagecraft::gui::LogPanel</name>
    <message>
        <location filename="../app/gui/live/log_panel.cpp" line="41"/>
        <source>All Levels</source>
        <translation>所有级别</translation>
    </message>
    <message>
        <location filename="../app/gui/live/log_panel.cpp" line="42"/>
        <source>Warnings and Errors</source>
        <translation>警告和错误</translation>
    </message>
    <message>
        <location filename="../app/gui/live/log_panel.cpp" line="43"/>
        <source>Errors Only</source>
        <translation>仅错误</translation>
    </message>
    <message>
        <location filename="../app/gui/live/log_panel.cpp" line="44"/>
        <source>Show messages of this level and worse</source>
        <translation>显示此级别及更严重级别的消息</translation>
    </message>
    <message>
        <location filename="../app/gui/live/log_panel.cpp" line="47"/>
        <source>Filter messages</source>
        <translation>筛选消息</translation>
    </message>
    <message>
        <location filename="../app/gui/live/log_panel.cpp" line="51"/>
        <source>Clear</source>
        <translation>清除</translation>
    </message>
    <message>
        <location filename="../app/gui/live/log_panel.cpp" line="52"/>
        <source>Remove every message</source>
        <translation>删除所有消息</translation>
    </message>
    <message>
        <location filename="../app/gui/live/log_panel.cpp" line="88"/>
        <source>Level:</source>
        <translation>级别：</translation>
    </message>
</context>
<context>
    <name>stagecraft::gui::LossChart</name>
    <message>
        <location filename="../app/gui/live/loss_chart.cpp" line="19"/>
        <source>Training Loss</source>
        <translation>训练损失</translation>
    </message>
    <message>
        <location filename="../app/gui/live/loss_chart.cpp" line="22"/>
        <location filename="../app/gui/live/loss_chart.cpp" line="48"/>
        <source>Loss</source>
        <translation>损失</translation>
    </message>
    <message>
        <location filename="../app/gui/live/loss_chart.cpp" line="26"/>
        <source>Smoothed (EMA)</source>
        <translation>平滑 (EMA)</translation>
    </message>
    <message>
        <location filename="../app/gui/live/loss_chart.cpp" line="31"/>
        <source>Held-out loss</source>
        <translation>留出集损失</translation>
    </message>
    <message>
        <location filename="../app/gui/live/loss_chart.cpp" line="35"/>
        <source>Held-out accuracy</source>
        <translation>留出集准确率</translation>
    </message>
    <message>
        <location filename="../app/gui/live/loss_chart.cpp" line="38"/>
        <source>Accuracy (%)</source>
        <translation>准确率 (%)</translation>
    </message>
    <message>
        <location filename="../app/gui/live/loss_chart.cpp" line="47"/>
        <source>Step</source>
        <translation>步</translation>
    </message>
    <message>
        <location filename="../app/gui/live/loss_chart.cpp" line="152"/>
        <source>Logarithmic Scale</source>
        <translation>对数坐标</translation>
    </message>
</context>
<context>
    <name>stagecraft::gui::MainWindow</name>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="123"/>
        <source>planner</source>
        <translation>规划器</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="129"/>
        <source>Planning…</source>
        <translation>正在规划…</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="136"/>
        <location filename="../app/gui/window/main_window.cpp" line="142"/>
        <location filename="../app/gui/window/main_window.cpp" line="150"/>
        <location filename="../app/gui/window/main_window_training.cpp" line="274"/>
        <source>discovery</source>
        <translation>设备发现</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="136"/>
        <source>Device %1 is listed.</source>
        <translation>已列出设备 %1。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="139"/>
        <location filename="../app/gui/window/main_window.cpp" line="420"/>
        <source>Cannot add the device at %1: %2</source>
        <translation>无法添加位于 %1 的设备：%2</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="142"/>
        <source>Discovered %1 at %2.</source>
        <translation>发现了位于 %2 的 %1。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="151"/>
        <source>A beacon from %1 claims to be %2, known at %3: ignored. Add the address with Ctrl+D if the device really moved.</source>
        <translation>来自 %1 的信标自称是 %2（已知地址为 %3）：已忽略。如果该设备确实换了地址，请用 Ctrl+D 添加该地址。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="158"/>
        <source>Device %1 stopped answering.</source>
        <translation>设备 %1 已停止响应。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="161"/>
        <source>Device %1 answers again.</source>
        <translation>设备 %1 重新应答。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="231"/>
        <source>Plan over these devices</source>
        <translation>基于这些设备进行规划</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="232"/>
        <source>Plan over the devices listed here, including discovered and added ones.</source>
        <translation>基于此处列出的设备进行规划，包括已发现和手动添加的设备。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="240"/>
        <source>Devices</source>
        <translation>设备</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="248"/>
        <source>A model from the built-in zoo, or a TorchScript file (File → Open TorchScript Model…).</source>
        <translation>内置模型库中的模型，或 TorchScript 文件（文件 → 打开 TorchScript 模型…）。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="256"/>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="270"/>
        <location filename="../app/gui/window/main_window_training.cpp" line="132"/>
        <source>Training</source>
        <translation>训练</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="276"/>
        <source>Stages</source>
        <translation>阶段</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="283"/>
        <source>Use the %1 plan</source>
        <translation>使用 %1 的方案</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="285"/>
        <source>Double-click a planner to edit its plan.</source>
        <translation>双击规划器以编辑其方案。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="286"/>
        <source>Compare planners</source>
        <translation>比较规划器</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="292"/>
        <source>Log</source>
        <translation>日志</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="301"/>
        <source>%1 (%2)</source>
        <translation>%1 (%2)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="305"/>
        <source>Open &amp;Cluster…</source>
        <translation>打开集群(&amp;C)…</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="305"/>
        <source>Open a cluster file</source>
        <translation>打开集群文件</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="306"/>
        <source>Open cluster</source>
        <translation>打开集群</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="307"/>
        <source>Cluster files (*.json);;All files (*)</source>
        <translation>集群文件 (*.json);;所有文件 (*)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="310"/>
        <source>Open &amp;TorchScript Model…</source>
        <translation>打开 TorchScript 模型(&amp;T)…</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="310"/>
        <source>Plan and train your own PyTorch model</source>
        <translation>规划并训练您自己的 PyTorch 模型</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="312"/>
        <source>Open &amp;Plan…</source>
        <translation>打开方案(&amp;P)…</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="312"/>
        <source>Ctrl+Shift+O</source>
        <translation>Ctrl+Shift+O</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="312"/>
        <source>Open a plan file</source>
        <translation>打开方案文件</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="313"/>
        <source>Open plan</source>
        <translation>打开方案</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="314"/>
        <source>Plan files (*.json);;All files (*)</source>
        <translation>方案文件 (*.json);;所有文件 (*)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="317"/>
        <source>&amp;Save Plan As…</source>
        <translation>方案另存为(&amp;S)…</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="317"/>
        <source>Save the plan for the command line and the workers</source>
        <translation>保存方案，供命令行和工作节点使用</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="319"/>
        <source>&amp;Export Charts…</source>
        <translation>导出图表(&amp;E)…</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="319"/>
        <source>Ctrl+E</source>
        <translation>Ctrl+E</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="319"/>
        <source>Export the charts to PNG or PDF</source>
        <translation>将图表导出为 PNG 或 PDF</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="321"/>
        <source>&amp;Quit</source>
        <translation>退出(&amp;Q)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="321"/>
        <source>Quit Stagecraft</source>
        <translation>退出 Stagecraft</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="323"/>
        <source>&amp;Undo</source>
        <translation>撤销(&amp;U)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="325"/>
        <source>&amp;Redo</source>
        <translation>重做(&amp;R)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="328"/>
        <source>Start &amp;Local Cluster</source>
        <translation>启动本地集群(&amp;L)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="328"/>
        <source>Ctrl+L</source>
        <translation>Ctrl+L</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="329"/>
        <source>Run every device of the cluster as an emulated worker on this machine</source>
        <translation>在本机上将集群中的每台设备作为模拟工作节点运行</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="331"/>
        <source>&amp;Add Device…</source>
        <translation>添加设备(&amp;A)…</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="331"/>
        <source>Ctrl+D</source>
        <translation>Ctrl+D</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="331"/>
        <source>Add a worker by its address</source>
        <translation>按地址添加工作节点</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="333"/>
        <source>&amp;Auto-plan</source>
        <translation>自动规划(&amp;A)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="333"/>
        <source>Ctrl+P</source>
        <translation>Ctrl+P</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="333"/>
        <source>Plan with the chosen planner</source>
        <translation>使用所选规划器进行规划</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="335"/>
        <source>&amp;Compare Planners</source>
        <translation>比较规划器(&amp;C)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="335"/>
        <source>Ctrl+K</source>
        <translation>Ctrl+K</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="335"/>
        <source>Run every planner side by side</source>
        <translation>并排运行所有规划器</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="342"/>
        <source>&amp;Deploy</source>
        <translation>部署(&amp;D)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="342"/>
        <source>F7</source>
        <translation>F7</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="342"/>
        <source>Send each device its stage</source>
        <translation>向每台设备发送其所属阶段</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="343"/>
        <source>&amp;Start Training</source>
        <translation>开始训练(&amp;S)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="343"/>
        <source>F5</source>
        <translation>F5</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="343"/>
        <source>Train the deployed plan</source>
        <translation>训练已部署的方案</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="345"/>
        <source>S&amp;top</source>
        <translation>停止(&amp;T)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="345"/>
        <source>Shift+F5</source>
        <translation>Shift+F5</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="345"/>
        <source>Stop at the end of the current step</source>
        <translation>在当前步结束时停止</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="347"/>
        <source>&amp;Re-plan Now</source>
        <translation>立即重新规划(&amp;R)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="347"/>
        <source>Ctrl+R</source>
        <translation>Ctrl+R</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="348"/>
        <source>Plan again over the devices live now, with their measured speeds</source>
        <translation>基于当前在线的设备及其实测速度重新规划</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="349"/>
        <source>E&amp;xport Trained Model…</source>
        <translation>导出训练后的模型(&amp;X)…</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="350"/>
        <source>Write the trained TorchScript model for torch.jit.load</source>
        <translation>写出训练后的 TorchScript 模型，供 torch.jit.load 加载</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="352"/>
        <source>Main</source>
        <translation>主工具栏</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="363"/>
        <source>&amp;File</source>
        <translation>文件(&amp;F)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="367"/>
        <source>Open &amp;Recent</source>
        <translation>最近打开(&amp;R)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="374"/>
        <source>&amp;Edit</source>
        <translation>编辑(&amp;E)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="378"/>
        <source>Add &amp;Stage</source>
        <translation>添加阶段(&amp;S)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="380"/>
        <source>&amp;Cluster</source>
        <translation>集群(&amp;C)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="382"/>
        <source>Stop Local Cluster</source>
        <translation>停止本地集群</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="393"/>
        <source>&amp;Plan</source>
        <translation>规划(&amp;P)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="397"/>
        <source>&amp;Training</source>
        <translation>训练(&amp;T)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="403"/>
        <source>&amp;View</source>
        <translation>视图(&amp;V)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="406"/>
        <source>&amp;Help</source>
        <translation>帮助(&amp;H)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="407"/>
        <source>&amp;About Stagecraft</source>
        <translation>关于 Stagecraft(&amp;A)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="408"/>
        <source>About &amp;Qt</source>
        <translation>关于 Qt(&amp;Q)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_documents.cpp" line="211"/>
        <source>Unsaved plan</source>
        <translation>方案未保存</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_documents.cpp" line="211"/>
        <source>The plan has edits that are not saved. Save them before quitting?</source>
        <translation>方案有尚未保存的修改。退出前要保存吗？</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="120"/>
        <location filename="../app/gui/window/main_window.cpp" line="443"/>
        <location filename="../app/gui/window/main_window.cpp" line="448"/>
        <location filename="../app/gui/window/main_window_documents.cpp" line="86"/>
        <location filename="../app/gui/window/main_window_documents.cpp" line="99"/>
        <location filename="../app/gui/window/main_window_documents.cpp" line="137"/>
        <location filename="../app/gui/window/main_window_training.cpp" line="80"/>
        <location filename="../app/gui/window/main_window_training.cpp" line="288"/>
        <location filename="../app/gui/window/main_window_training.cpp" line="291"/>
        <location filename="../app/gui/window/main_window_training.cpp" line="312"/>
        <location filename="../app/gui/window/main_window_training.cpp" line="317"/>
        <source>console</source>
        <translation>控制台</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="120"/>
        <source>%1 joins the plan&apos;s devices.</source>
        <translation>%1 已加入方案的设备。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_documents.cpp" line="47"/>
        <source>%1: give its sample shape with File → Open TorchScript Model…</source>
        <translation>%1：请用“文件 → 打开 TorchScript 模型…”给出其样本形状</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_documents.cpp" line="99"/>
        <source>Opened cluster %1.</source>
        <translation>已打开集群 %1。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_documents.cpp" line="103"/>
        <source>Cannot open the cluster</source>
        <translation>无法打开集群</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_documents.cpp" line="116"/>
        <source>Cannot load the model</source>
        <translation>无法加载模型</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_documents.cpp" line="123"/>
        <source>Open TorchScript model</source>
        <translation>打开 TorchScript 模型</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_documents.cpp" line="124"/>
        <source>TorchScript files (*.pt *.pth *.ts);;All files (*)</source>
        <translation>TorchScript 文件 (*.pt *.pth *.ts);;所有文件 (*)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_documents.cpp" line="129"/>
        <source>Sample shape</source>
        <translation>样本形状</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_documents.cpp" line="130"/>
        <source>The shape of one sample, without the batch:
C,H,W for images (3,32,32), D for vectors (784),
T for token sequences (when the first layer is an nn.Embedding).</source>
        <translation>单个样本的形状（不含批次维度）：
图像为 C,H,W（3,32,32），向量为 D（784），
词元序列为 T（第一层为 nn.Embedding 时）。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_documents.cpp" line="138"/>
        <source>Imported %1: %2 layers.</source>
        <translation>已导入 %1：%2 层。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_documents.cpp" line="145"/>
        <source>%1 (TorchScript)</source>
        <translation>%1（TorchScript）</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_documents.cpp" line="155"/>
        <source>Cannot open the plan</source>
        <translation>无法打开方案</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_documents.cpp" line="166"/>
        <source>Save plan</source>
        <translation>保存方案</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_documents.cpp" line="167"/>
        <source>Plan files (*.json)</source>
        <translation>方案文件 (*.json)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_documents.cpp" line="172"/>
        <source>Cannot save the plan</source>
        <translation>无法保存方案</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_documents.cpp" line="178"/>
        <source>Saved %1</source>
        <translation>已保存 %1</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="414"/>
        <source>Add device</source>
        <translation>添加设备</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="414"/>
        <source>Worker address (host:port):</source>
        <translation>工作节点地址 (host:port)：</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="425"/>
        <source>About Stagecraft</source>
        <translation>关于 Stagecraft</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="426"/>
        <source>&lt;h3&gt;Stagecraft %1&lt;/h3&gt;&lt;p&gt;Plans, runs and watches hybrid-pipeline training on heterogeneous edge devices: layers cut into stages, each stage on a group of devices, the stages in a 1F1B pipeline.&lt;/p&gt;</source>
        <translation>&lt;h3&gt;Stagecraft %1&lt;/h3&gt;&lt;p&gt;在异构边缘设备上规划、运行并监视混合流水线训练：将各层切分为阶段，每个阶段运行在一组设备上，各阶段组成 1F1B 流水线。&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_documents.cpp" line="197"/>
        <source>Cluster: %1</source>
        <translation>集群：%1</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_documents.cpp" line="202"/>
        <source>Plan: %1</source>
        <translation>方案：%1</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="434"/>
        <source>Stagecraft</source>
        <translation>Stagecraft</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window.cpp" line="438"/>
        <source>%1 on %2</source>
        <translation>%2 上的 %1</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="68"/>
        <source>%1 (%2/%3)</source>
        <translation>%1 (%2/%3)</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/gui/window/main_window_training.cpp" line="81"/>
        <source>%n local worker(s) run on this machine.</source>
        <translation>
            <numerusform>本机上运行着 %n 个本地工作节点。</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="102"/>
        <source>Step %1 of %2: loss %3, %4 samples/s</source>
        <translation>第 %1/%2 步：损失 %3，%4 样本/秒</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="112"/>
        <source>, %1 steps/s, %2 left</source>
        <translation>，%1 步/秒，剩余 %2</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="86"/>
        <location filename="../app/gui/window/main_window_training.cpp" line="130"/>
        <location filename="../app/gui/window/main_window_training.cpp" line="135"/>
        <location filename="../app/gui/window/main_window_training.cpp" line="149"/>
        <source>coordinator</source>
        <translation>协调器</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="87"/>
        <source>Held-out accuracy after step %1: %2 % of %3 samples (loss %4).</source>
        <translation>第 %1 步后的留出集准确率：%3 个样本中 %2 %（损失 %4）。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="135"/>
        <source>Training reached step %1.</source>
        <translation>训练已到达第 %1 步。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="150"/>
        <source>The new plan runs from step %1 with the weights carried over.</source>
        <translation>新方案从第 %1 步开始运行，并沿用现有权重。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="155"/>
        <source>lost while training, after step %1</source>
        <translation>训练中丢失（第 %1 步之后）</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="157"/>
        <source>%1 lost; training goes on without it.</source>
        <translation>%1 已丢失；训练在没有它的情况下继续。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="165"/>
        <source>%1 takes %2x as long as the plan expects, next to the other devices.</source>
        <translation>与其他设备相比，%1 的计算用时是计划预期的 %2 倍。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="179"/>
        <source>Calibrated from training, another plan is predicted %1 samples/s against the running plan&apos;s %2 (%3x).</source>
        <translation>按训练实测校准后，另一方案预测为 %1 样本/秒，当前运行方案为 %2（%3 倍）。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="189"/>
        <source>The re-plan at step %1 promised %2 samples/s but measures %3 (%4 % of it).</source>
        <translation>第 %1 步的重新规划承诺 %2 样本/秒，实测只有 %3（为承诺的 %4 %）。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="194"/>
        <source>The plan before it measured %1.</source>
        <translation>之前的方案实测为 %1。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="195"/>
        <source>Go back to the previous plan</source>
        <translation>退回到之前的方案</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="204"/>
        <source>Training diverged at step %1 (loss %2): stopped, and the workers went back to the weights of step %3. Learning rate %4 is too high.</source>
        <translation>训练在第 %1 步发散（损失 %2）：已停止，工作节点已回到第 %3 步的权重。学习率 %4 过高。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="210"/>
        <source>Continue at learning rate %1</source>
        <translation>以学习率 %1 继续</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="214"/>
        <source>Training diverged at step %1.</source>
        <translation>训练在第 %1 步发散。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="410"/>
        <source>Export trained model</source>
        <translation>导出训练后的模型</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="412"/>
        <source>TorchScript files (*.pt)</source>
        <translation>TorchScript 文件 (*.pt)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="171"/>
        <source>%1 Re-planning around it (predicted %2x faster).</source>
        <translation>%1 正在绕开它重新规划（预计快 %2 倍）。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="173"/>
        <source>%1 A re-plan is predicted %2x faster.</source>
        <translation>%1 重新规划预计快 %2 倍。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="174"/>
        <location filename="../app/gui/window/main_window_training.cpp" line="184"/>
        <source>Re-plan</source>
        <translation>重新规划</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="255"/>
        <source>%1 s</source>
        <translation>%1 秒</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="256"/>
        <source>%1 min %2 s</source>
        <translation>%1 分 %2 秒</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="257"/>
        <source>%1 h %2 min</source>
        <translation>%1 小时 %2 分</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="263"/>
        <source>%1 answers again. Include it in a re-plan at the next step boundary?</source>
        <translation>%1 重新应答。是否在下一个步边界重新规划时纳入它？</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="264"/>
        <source>Re-plan with %1</source>
        <translation>纳入 %1 重新规划</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="266"/>
        <source>Training is not running: deploy again to use %1.</source>
        <translation>训练未在运行：请重新部署以使用 %1。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="275"/>
        <source>Cannot listen for worker beacons on UDP port %1: %2</source>
        <translation>无法在 UDP 端口 %1 上监听工作节点信标：%2</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="288"/>
        <source>Calls to workers carry the cluster token in %1.</source>
        <translation>对工作节点的调用携带 %1 中的集群令牌。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="292"/>
        <source>Cannot use the cluster token: %1</source>
        <translation>无法使用集群令牌：%1</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="313"/>
        <source>Calls to workers use mutual TLS: certificate %1, cluster CA %2.</source>
        <translation>对工作节点的调用使用双向 TLS：证书 %1，集群 CA %2。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="318"/>
        <source>Cannot use TLS: %1</source>
        <translation>无法使用 TLS：%1</translation>
    </message>
    <message>
        <location filename="../app/gui/window/main_window_training.cpp" line="341"/>
        <location filename="../app/gui/window/main_window_training.cpp" line="360"/>
        <source>Cannot deploy</source>
        <translation>无法部署</translation>
    </message>
</context>
<context>
    <name>stagecraft::gui::MemoryBars</name>
    <message>
        <location filename="../app/gui/editor/memory_bars.cpp" line="61"/>
        <location filename="../app/gui/editor/memory_bars.cpp" line="92"/>
        <source>%1 / %2</source>
        <translation>%1 / %2</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/memory_bars.cpp" line="91"/>
        <source>unused</source>
        <translation>未使用</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/memory_bars.cpp" line="110"/>
        <source>%1 is in no stage.</source>
        <translation>%1 不属于任何阶段。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/memory_bars.cpp" line="112"/>
        <source>%1 needs %2 in stage %3 but has %4.</source>
        <translation>%1 在阶段 %3 中需要 %2，但只有 %4。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/memory_bars.cpp" line="117"/>
        <source>%1 peaks at %2 of %3 in stage %4.</source>
        <translation>%1 在阶段 %4 中的峰值为 %2（上限 %3）。</translation>
    </message>
</context>
<context>
    <name>stagecraft::gui::NoticeBanner</name>
    <message>
        <location filename="../app/gui/window/notice_banner.cpp" line="30"/>
        <source>Dismiss</source>
        <translation>关闭</translation>
    </message>
</context>
<context>
    <name>stagecraft::gui::PartitionEditor</name>
    <message>
        <location filename="../app/gui/editor/partition_editor.cpp" line="137"/>
        <source>Open a model and a cluster to edit a plan.</source>
        <translation>请打开模型和集群以编辑方案。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/partition_editor.cpp" line="284"/>
        <location filename="../app/gui/editor/partition_editor.cpp" line="292"/>
        <source>Unused devices</source>
        <translation>未使用的设备</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/partition_editor.cpp" line="295"/>
        <source>Every device is in a stage; drop one here to free it.</source>
        <translation>所有设备都已分配到阶段；将设备拖放到此处即可将其释放。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/partition_editor.cpp" line="461"/>
        <source>Remove %1 from stage %2</source>
        <translation>从阶段 %2 中移除 %1</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/partition_editor.cpp" line="464"/>
        <source>Add a stage</source>
        <translation>添加阶段</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/partition_editor.cpp" line="466"/>
        <source>Remove stage %1</source>
        <translation>移除阶段 %1</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/partition_editor.cpp" line="544"/>
        <source>Drag to move the cut between stage %1 and stage %2.</source>
        <translation>拖动以移动阶段 %1 与阶段 %2 之间的切分点。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/partition_editor.cpp" line="549"/>
        <source>%1 (%2 tier): %3 GFLOP/s, memory %4 of %5, busy %6 % of the iteration.</source>
        <translation>%1（%2层级）：%3 GFLOP/s，内存 %4 / %5，忙碌时间占迭代的 %6 %。</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/gui/editor/partition_editor.cpp" line="562"/>
        <source>×%1: it computes %1 of the %2 samples of every micro-batch of stage %3.</source>
        <translation>
            <numerusform>×%1：它计算阶段 %3 每个微批次 %2 个样本中的 %1 个。</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../app/gui/editor/partition_editor.cpp" line="566"/>
        <source>×0: it is in stage %1 but gets no samples of a micro-batch, so it computes nothing.</source>
        <translation>×0：它属于阶段 %1，但不分配微批次中的任何样本，因此不进行计算。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/partition_editor.cpp" line="570"/>
        <source>Its worker does not answer: it cannot train until it answers again.</source>
        <translation>其工作节点无响应：在恢复响应之前无法参与训练。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/partition_editor.cpp" line="572"/>
        <source>It does not have enough memory.</source>
        <translation>内存不足。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/partition_editor.cpp" line="578"/>
        <source>Layer %1 “%2” (%3): forward %4 and backward %5 per sample, %6 parameters, %7 of activation per sample.</source>
        <translation>第 %1 层“%2”（%3）：每样本前向 %4、反向 %5，%6 个参数，每样本激活 %7。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/partition_editor.cpp" line="587"/>
        <source>Stage %1 bounds the iteration: its busiest device is occupied %2 of the %3 iteration, computing or on its link.</source>
        <translation>阶段 %1 决定了迭代时间：其最忙的设备在 %3 的迭代中有 %2 处于计算或链路占用状态。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/partition_editor.cpp" line="592"/>
        <source>Stage %1 computes the slowest of all stages.</source>
        <translation>阶段 %1 是所有阶段中计算最慢的。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/partition_editor.cpp" line="594"/>
        <source>Devices in no stage. Drag one onto a stage to add it to its group.</source>
        <translation>不属于任何阶段的设备。将设备拖到某个阶段即可加入该阶段的设备组。</translation>
    </message>
</context>
<context>
    <name>stagecraft::gui::PlanCompareView</name>
    <message>
        <location filename="../app/gui/editor/plan_compare_view.cpp" line="18"/>
        <source>%1 — invalid</source>
        <translation>%1 — 无效</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_compare_view.cpp" line="19"/>
        <source>%1 — %2 samples/s</source>
        <translation>%1 — %2 样本/秒</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_compare_view.cpp" line="59"/>
        <source>Current plan</source>
        <translation>当前方案</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_compare_view.cpp" line="60"/>
        <source>Proposed plan</source>
        <translation>建议方案</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_compare_view.cpp" line="83"/>
        <source>The current plan is invalid; the proposed plan replaces it.</source>
        <translation>当前方案无效；建议方案将替换它。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_compare_view.cpp" line="84"/>
        <source>The proposed plan is invalid.</source>
        <translation>建议方案无效。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_compare_view.cpp" line="86"/>
        <source>+%1 % samples/s</source>
        <translation>+%1 % 样本/秒</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_compare_view.cpp" line="86"/>
        <source>−%1 % samples/s</source>
        <translation>−%1 % 样本/秒</translation>
    </message>
</context>
<context>
    <name>stagecraft::gui::PlanSession</name>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="58"/>
        <source>The planner found no feasible plan.</source>
        <translation>规划器未找到可行方案。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="63"/>
        <source>The planner produced an invalid plan: %1</source>
        <translation>规划器生成了无效方案：%1</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/gui/editor/plan_session.cpp" line="286"/>
        <source>%1 does not answer: move it to the unused devices, or wait until it answers again.</source>
        <translation>
            <numerusform>%1 无响应：请将其移到未使用的设备中，或等待其恢复响应。</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="309"/>
        <location filename="../app/gui/editor/plan_session.cpp" line="316"/>
        <location filename="../app/gui/editor/plan_session.cpp" line="322"/>
        <location filename="../app/gui/editor/plan_session.cpp" line="362"/>
        <location filename="../app/gui/editor/plan_session.cpp" line="370"/>
        <location filename="../app/gui/editor/plan_session.cpp" line="375"/>
        <location filename="../app/gui/editor/plan_session.cpp" line="381"/>
        <location filename="../app/gui/editor/plan_session.cpp" line="387"/>
        <location filename="../app/gui/editor/plan_session.cpp" line="393"/>
        <location filename="../app/gui/editor/plan_session.cpp" line="401"/>
        <location filename="../app/gui/editor/plan_session.cpp" line="415"/>
        <location filename="../app/gui/editor/plan_session.cpp" line="447"/>
        <source>Open a model and a cluster first.</source>
        <translation>请先打开模型和集群。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="311"/>
        <source>Move the boundary after stage %1</source>
        <translation>移动阶段 %1 之后的边界</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="317"/>
        <source>Move layers to stage %1</source>
        <translation>将层移动到阶段 %1</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="329"/>
        <location filename="../app/gui/editor/plan_session.cpp" line="364"/>
        <source>Device %1 is not in cluster %2.</source>
        <translation>设备 %1 不在集群 %2 中。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="330"/>
        <source>Put %1 into stage %2</source>
        <translation>将 %1 放入阶段 %2</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="365"/>
        <source>Take %1 out of its stage</source>
        <translation>将 %1 移出其所在阶段</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="371"/>
        <source>Add a stage</source>
        <translation>添加阶段</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="376"/>
        <source>Remove stage %1</source>
        <translation>移除阶段 %1</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="382"/>
        <source>Set the batch to %1</source>
        <translation>将批次大小设为 %1</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="389"/>
        <source>Use %1 micro-batches</source>
        <translation>使用 %1 个微批次</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="395"/>
        <source>Use the %1 schedule</source>
        <translation>使用 %1 调度</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="402"/>
        <source>Unknown optimizer.</source>
        <translation>未知的优化器。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="410"/>
        <source>Use the %1 optimizer</source>
        <translation>使用 %1 优化器</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="418"/>
        <source>The plan names layers that model %1 does not have.</source>
        <translation>方案中包含模型 %1 中不存在的层。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="423"/>
        <source>The plan names devices that cluster %1 does not have.</source>
        <translation>方案中包含集群 %1 中不存在的设备。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="427"/>
        <source>Replace the plan</source>
        <translation>替换方案</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="95"/>
        <source>Cannot plan: %1</source>
        <translation>无法规划：%1</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="466"/>
        <source>Planner %1 found no plan: %2</source>
        <translation>规划器 %1 未找到方案：%2</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="469"/>
        <source>Auto-plan with %1</source>
        <translation>使用 %1 自动规划</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="470"/>
        <source>Planner %1 planned in %2 ms.</source>
        <translation>规划器 %1 规划耗时 %2 ms。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="501"/>
        <source>Open a cluster before loading a plan.</source>
        <translation>加载方案前请先打开集群。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="508"/>
        <source>Load %1</source>
        <translation>加载 %1</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="519"/>
        <source>Cannot load the plan: %1</source>
        <translation>无法加载方案：%1</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="525"/>
        <source>There is no plan to save.</source>
        <translation>没有可保存的方案。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_session.cpp" line="538"/>
        <source>Cannot save the plan: %1</source>
        <translation>无法保存方案：%1</translation>
    </message>
</context>
<context>
    <name>stagecraft::gui::PlanSummary</name>
    <message>
        <location filename="../app/gui/editor/plan_summary.cpp" line="39"/>
        <source>Samples/s</source>
        <translation>样本/秒</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_summary.cpp" line="40"/>
        <source>Iteration</source>
        <translation>迭代时间</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_summary.cpp" line="41"/>
        <source>Bubble</source>
        <translation>气泡</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_summary.cpp" line="42"/>
        <source>Micro-batches</source>
        <translation>微批次</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_summary.cpp" line="44"/>
        <source>How the last edit changed the predicted samples/s.</source>
        <translation>上一次编辑对预测样本/秒的影响。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_summary.cpp" line="47"/>
        <source>Samples/s training measures on this plan (the last steps), and its share of the prediction.</source>
        <translation>训练在此方案上实测的样本/秒（最近几步）及其占预测值的比例。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_summary.cpp" line="84"/>
        <source>Samples/s (%1)</source>
        <translation>样本/秒（%1）</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_summary.cpp" line="87"/>
        <source>Predicted from the cluster file&apos;s speeds and the model&apos;s FLOPs.</source>
        <translation>根据集群文件中的速度和模型的 FLOPs 预测。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_summary.cpp" line="90"/>
        <source>Predicted from each layer&apos;s time measured on the workers.</source>
        <translation>根据在工作节点上实测的每层耗时预测。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_summary.cpp" line="93"/>
        <source>Predicted with each device&apos;s speed as training measured it.</source>
        <translation>使用训练中实测的各设备速度预测。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_summary.cpp" line="97"/>
        <source>%1 × %2</source>
        <translation>%1 × %2</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_summary.cpp" line="98"/>
        <source>%1 micro-batches of %2 samples per iteration.</source>
        <translation>每次迭代 %1 个微批次，每个微批次 %2 个样本。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_summary.cpp" line="102"/>
        <source>%1 %</source>
        <translation>%1 %</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_summary.cpp" line="103"/>
        <source>Simulated; the closed-form estimate is %1 samples/s.</source>
        <translation>模拟值；闭式估算为 %1 样本/秒。</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_summary.cpp" line="110"/>
        <source>▲ %1 %</source>
        <translation>▲ %1 %</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_summary.cpp" line="110"/>
        <source>▼ %1 %</source>
        <translation>▼ %1 %</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_summary.cpp" line="122"/>
        <source>Invalid plan: %1 (and %2 more)</source>
        <translation>无效方案：%1（另有 %2 项）</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_summary.cpp" line="123"/>
        <source>Invalid plan: %1</source>
        <translation>无效方案：%1</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_summary.cpp" line="149"/>
        <source>measured %1 (%2 %)</source>
        <translation>实测 %1（%2 %）</translation>
    </message>
    <message>
        <location filename="../app/gui/editor/plan_summary.cpp" line="151"/>
        <source>measured %1</source>
        <translation>实测 %1</translation>
    </message>
</context>
<context>
    <name>stagecraft::gui::ReplanDialog</name>
    <message>
        <location filename="../app/gui/window/replan_dialog.cpp" line="18"/>
        <source>Re-plan now</source>
        <translation>立即重新规划</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/gui/window/replan_dialog.cpp" line="21"/>
        <source>Planned again over the %n device(s) that answer now, with the speeds measured during training. Applying stops at the end of the current step, carries the weights over and continues at the next step.</source>
        <translation>
            <numerusform>已基于当前有响应的 %n 台设备，使用训练期间实测的速度重新规划。应用后将在当前步结束时停止，沿用现有权重，并从下一步继续。</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../app/gui/window/replan_dialog.cpp" line="30"/>
        <source>Predicted (%1): %2 → %3 samples/s</source>
        <translation>预测（%1）：%2 → %3 样本/秒</translation>
    </message>
    <message>
        <location filename="../app/gui/window/replan_dialog.cpp" line="38"/>
        <source>&amp;Apply new plan</source>
        <translation>应用新方案(&amp;A)</translation>
    </message>
</context>
<context>
    <name>stagecraft::gui::StageModel</name>
    <message>
        <location filename="../app/gui/models/stage_model.cpp" line="49"/>
        <source>%1 ×%2</source>
        <translation>%1 ×%2</translation>
    </message>
    <message>
        <location filename="../app/gui/models/stage_model.cpp" line="64"/>
        <location filename="../app/gui/models/stage_model.cpp" line="102"/>
        <source>no layers</source>
        <translation>无层</translation>
    </message>
    <message>
        <location filename="../app/gui/models/stage_model.cpp" line="65"/>
        <source>%1–%2 (%3 to %4)</source>
        <translation>%1–%2（%3 至 %4）</translation>
    </message>
    <message>
        <location filename="../app/gui/models/stage_model.cpp" line="70"/>
        <source>no devices</source>
        <translation>无设备</translation>
    </message>
    <message>
        <location filename="../app/gui/models/stage_model.cpp" line="74"/>
        <source>%1 of %2 (%3)</source>
        <translation>%1 / %2（%3）</translation>
    </message>
    <message>
        <location filename="../app/gui/models/stage_model.cpp" line="99"/>
        <source>Stage %1 runs %2 on %3 device(s); one micro-batch of %4 samples takes %5 on its slowest member. Drop layers of a neighbouring stage or devices here.</source>
        <translation>阶段 %1（%2）运行在 %3 台设备上；一个 %4 样本的微批次在其最慢的成员上耗时 %5。可将相邻阶段的层或设备拖放到此处。</translation>
    </message>
    <message>
        <location filename="../app/gui/models/stage_model.cpp" line="102"/>
        <source>layers %1 to %2</source>
        <translation>层 %1 至 %2</translation>
    </message>
    <message>
        <location filename="../app/gui/models/stage_model.cpp" line="115"/>
        <source>Stage</source>
        <translation>阶段</translation>
    </message>
    <message>
        <location filename="../app/gui/models/stage_model.cpp" line="116"/>
        <source>Layers</source>
        <translation>层</translation>
    </message>
    <message>
        <location filename="../app/gui/models/stage_model.cpp" line="117"/>
        <source>Devices (samples per micro-batch)</source>
        <translation>设备（每微批次样本数）</translation>
    </message>
    <message>
        <location filename="../app/gui/models/stage_model.cpp" line="118"/>
        <source>Compute per micro-batch</source>
        <translation>每微批次计算时间</translation>
    </message>
    <message>
        <location filename="../app/gui/models/stage_model.cpp" line="119"/>
        <source>Fullest device</source>
        <translation>内存占用最高的设备</translation>
    </message>
</context>
<context>
    <name>stagecraft::gui::ThroughputChart</name>
    <message>
        <location filename="../app/gui/live/throughput_chart.cpp" line="19"/>
        <source>Throughput</source>
        <translation>吞吐量</translation>
    </message>
    <message>
        <location filename="../app/gui/live/throughput_chart.cpp" line="22"/>
        <source>Measured</source>
        <translation>实测</translation>
    </message>
    <message>
        <location filename="../app/gui/live/throughput_chart.cpp" line="27"/>
        <location filename="../app/gui/live/throughput_chart.cpp" line="73"/>
        <source>Predicted</source>
        <translation>预测</translation>
    </message>
    <message>
        <location filename="../app/gui/live/throughput_chart.cpp" line="33"/>
        <source>Time since start (s)</source>
        <translation>自开始以来的时间 (s)</translation>
    </message>
    <message>
        <location filename="../app/gui/live/throughput_chart.cpp" line="34"/>
        <source>Throughput (samples/s)</source>
        <translation>吞吐量 (样本/秒)</translation>
    </message>
    <message>
        <location filename="../app/gui/live/throughput_chart.cpp" line="73"/>
        <source>Predicted (%1)</source>
        <translation>预测（%1）</translation>
    </message>
</context>
<context>
    <name>stagecraft::gui::TimelineChart</name>
    <message>
        <location filename="../app/gui/live/timeline_chart.cpp" line="46"/>
        <source>Time in iteration (ms)</source>
        <translation>迭代内时间 (ms)</translation>
    </message>
    <message>
        <location filename="../app/gui/live/timeline_chart.cpp" line="56"/>
        <source>Compute busy</source>
        <translation>计算忙碌</translation>
    </message>
    <message>
        <location filename="../app/gui/live/timeline_chart.cpp" line="77"/>
        <source>Forward</source>
        <translation>前向</translation>
    </message>
    <message>
        <location filename="../app/gui/live/timeline_chart.cpp" line="79"/>
        <source>Backward</source>
        <translation>反向</translation>
    </message>
    <message>
        <location filename="../app/gui/live/timeline_chart.cpp" line="81"/>
        <source>Send</source>
        <translation>发送</translation>
    </message>
    <message>
        <location filename="../app/gui/live/timeline_chart.cpp" line="83"/>
        <source>Receive</source>
        <translation>接收</translation>
    </message>
    <message>
        <location filename="../app/gui/live/timeline_chart.cpp" line="85"/>
        <source>All-reduce</source>
        <translation>全归约</translation>
    </message>
    <message>
        <location filename="../app/gui/live/timeline_chart.cpp" line="87"/>
        <source>Optimizer step</source>
        <translation>优化器更新</translation>
    </message>
    <message>
        <location filename="../app/gui/live/timeline_chart.cpp" line="91"/>
        <source>Unknown</source>
        <translation>未知</translation>
    </message>
    <message>
        <location filename="../app/gui/live/timeline_chart.cpp" line="137"/>
        <source>Device %1</source>
        <translation>设备 %1</translation>
    </message>
    <message>
        <location filename="../app/gui/live/timeline_chart.cpp" line="143"/>
        <source>Pipeline Timeline (no data yet)</source>
        <translation>流水线时间线（暂无数据）</translation>
    </message>
    <message>
        <location filename="../app/gui/live/timeline_chart.cpp" line="145"/>
        <source>Measured Iteration: %1 ms</source>
        <translation>实测迭代：%1 ms</translation>
    </message>
    <message>
        <location filename="../app/gui/live/timeline_chart.cpp" line="147"/>
        <source>Predicted Iteration: %1 ms</source>
        <translation>预测迭代：%1 ms</translation>
    </message>
    <message>
        <location filename="../app/gui/live/timeline_chart.cpp" line="173"/>
        <source>%1 %</source>
        <translation>%1 %</translation>
    </message>
    <message>
        <location filename="../app/gui/live/timeline_chart.cpp" line="202"/>
        <source>Send micro-batch %1 to %2</source>
        <translation>将微批次 %1 发送到 %2</translation>
    </message>
    <message>
        <location filename="../app/gui/live/timeline_chart.cpp" line="205"/>
        <source>Receive micro-batch %1 from %2</source>
        <translation>从 %2 接收微批次 %1</translation>
    </message>
    <message>
        <location filename="../app/gui/live/timeline_chart.cpp" line="208"/>
        <source>All-reduce of the stage&apos;s gradients</source>
        <translation>该阶段梯度的全归约</translation>
    </message>
    <message>
        <location filename="../app/gui/live/timeline_chart.cpp" line="211"/>
        <source>Optimizer step of the stage&apos;s weights</source>
        <translation>该阶段权重的优化器更新</translation>
    </message>
    <message>
        <location filename="../app/gui/live/timeline_chart.cpp" line="214"/>
        <source>%1 of micro-batch %2</source>
        <translation>微批次 %2 的%1</translation>
    </message>
    <message>
        <location filename="../app/gui/live/timeline_chart.cpp" line="217"/>
        <source>%1
%2
%3 – %4 ms (%5 ms)</source>
        <translation>%1
%2
%3 – %4 ms（%5 ms）</translation>
    </message>
</context>
<context>
    <name>stagecraft::gui::TrainingController</name>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="63"/>
        <source>Idle</source>
        <translation>空闲</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="64"/>
        <source>Starting local workers</source>
        <translation>正在启动本地工作节点</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="65"/>
        <source>Stopping local workers</source>
        <translation>正在停止本地工作节点</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="66"/>
        <source>Profiling</source>
        <translation>正在性能剖析</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="67"/>
        <source>Deploying</source>
        <translation>正在部署</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="68"/>
        <source>Deployed</source>
        <translation>已部署</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="69"/>
        <source>Training</source>
        <translation>正在训练</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="70"/>
        <source>Stopping</source>
        <translation>正在停止</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="71"/>
        <source>Stopped</source>
        <translation>已停止</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="72"/>
        <source>Re-planning</source>
        <translation>正在重新规划</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="122"/>
        <source>Local workers are already running; stop them first.</source>
        <translation>本地工作节点已在运行；请先停止它们。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="123"/>
        <source>Cannot start local workers while %1.</source>
        <translation>当前状态为“%1”，无法启动本地工作节点。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="131"/>
        <source>No local workers are running.</source>
        <translation>没有正在运行的本地工作节点。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="140"/>
        <source>Cannot deploy while %1.</source>
        <translation>当前状态为“%1”，无法部署。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="147"/>
        <source>Train at least one step.</source>
        <translation>请至少训练一步。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="149"/>
        <source>Cannot start training while %1.</source>
        <translation>当前状态为“%1”，无法开始训练。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="163"/>
        <source>Nothing is training.</source>
        <translation>当前没有正在进行的训练。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="245"/>
        <source>Using the local workers already running for cluster %1; they read data files only inside the --data-dir they were started with.</source>
        <translation>使用已为集群 %1 运行的本地工作节点；它们只读取其启动时 --data-dir 之内的数据文件。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="255"/>
        <source>Starting %1 local workers.</source>
        <translation>正在启动 %1 个本地工作节点。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="265"/>
        <source>%1 local workers answer.</source>
        <translation>%1 个本地工作节点已响应。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="347"/>
        <source>Profiling the model on %1 workers.</source>
        <translation>正在 %1 个工作节点上对模型进行性能剖析。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="354"/>
        <source>Profiled %1.</source>
        <translation>已完成 %1 的性能分析。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="362"/>
        <source>Deploying the plan to %1 workers.</source>
        <translation>正在将方案部署到 %1 个工作节点。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="369"/>
        <location filename="../app/gui/live/training_controller.cpp" line="370"/>
        <source>Deployed job %1 to %2 workers.</source>
        <translation>已将作业 %1 部署到 %2 个工作节点。</translation>
    </message>
    <message numerus="yes">
        <location filename="../app/gui/live/training_controller.cpp" line="403"/>
        <source>%n telemetry report(s) dropped because the console fell behind, so the charts have gaps (%1 by the workers, %2 here).</source>
        <translation>
            <numerusform>控制台处理不及，丢弃了 %n 条遥测报告，图表因此有空缺（工作节点丢弃 %1 条，本机丢弃 %2 条）。</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller_events.cpp" line="32"/>
        <source>Job %1 deployed: stage %2 of %3, layers %4–%5, rank %6 of %7, %8 samples per micro-batch.</source>
        <translation>作业 %1 已部署：阶段 %2 / %3，层 %4–%5，秩 %6 / %7，每微批次 %8 个样本。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller_events.cpp" line="37"/>
        <source>No coordinator for %1 s: job %2 stopped at step %3 (its lease ran out); ready for a new deployment.</source>
        <translation>%1 秒内没有协调器：作业 %2 已在第 %3 步停止（租约到期）；可以接受新的部署。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller_events.cpp" line="41"/>
        <source>Stopped at step %1.</source>
        <translation>已在第 %1 步停止。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller_events.cpp" line="58"/>
        <source>Calibration from training skipped: %1</source>
        <translation>已跳过按训练实测的校准：%1</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller_events.cpp" line="69"/>
        <source>Calibrated from training at step %1: predicted %2 samples/s (was %3).</source>
        <translation>第 %1 步已按训练实测校准：预测 %2 样本/秒（此前为 %3）。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller_events.cpp" line="126"/>
        <source>its group&apos;s other members take its samples</source>
        <translation>其组内其他成员接管它的样本</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller_events.cpp" line="128"/>
        <source>it answers again; the same plan goes on</source>
        <translation>它已恢复响应；沿用同一计划继续</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller_events.cpp" line="130"/>
        <source>re-planning over the devices left (%1)</source>
        <translation>正在对剩余设备（%1 台）重新规划</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller_events.cpp" line="133"/>
        <source>%1 stopped answering after step %2: %3, from step %4. Cause: %5</source>
        <translation>%1 在第 %2 步之后停止响应：%3，从第 %4 步继续。原因：%5</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller_events.cpp" line="134"/>
        <source>%1 was lost after step %2: %3, from step %4. Cause: %5</source>
        <translation>%1 在第 %2 步之后丢失：%3，从第 %4 步继续。原因：%5</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller_events.cpp" line="159"/>
        <source>%1 joined: re-planned in %2 s, %3 stages on %4 workers.</source>
        <translation>%1 已加入：用时 %2 秒重新规划，%3 个阶段，%4 个工作节点。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller_events.cpp" line="166"/>
        <source>Re-planned around %1 in %2 s: %3 stages on %4 workers.</source>
        <translation>已绕开 %1 重新规划，用时 %2 秒：%3 个阶段，%4 个工作节点。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller_events.cpp" line="173"/>
        <source>Training goes on without %1 after %2 s: %3 stages on %4 workers; steps replayed: %5.</source>
        <translation>%2 秒后训练在没有 %1 的情况下继续：%3 个阶段，%4 个工作节点；重放步数：%5。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller_events.cpp" line="187"/>
        <source>%1 takes %2x as long as the plan expects, next to the other devices.</source>
        <translation>与其他设备相比，%1 的计算用时是计划预期的 %2 倍。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller_events.cpp" line="201"/>
        <source>The re-plan at step %1 promised %2 samples/s and measured %3 (%4 % of it).</source>
        <translation>第 %1 步的重新规划承诺 %2 样本/秒，实测 %3（为承诺的 %4 %）。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller_events.cpp" line="156"/>
        <source>Re-planned in %1 s: %2 stages on %3 workers.</source>
        <translation>重新规划用时 %1 秒：%2 个阶段，%3 个工作节点。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="222"/>
        <location filename="../app/gui/live/training_controller.cpp" line="244"/>
        <location filename="../app/gui/live/training_controller.cpp" line="370"/>
        <location filename="../app/gui/live/training_controller.cpp" line="402"/>
        <location filename="../app/gui/live/training_controller.cpp" line="415"/>
        <location filename="../app/gui/live/training_controller.cpp" line="430"/>
        <location filename="../app/gui/live/training_controller.cpp" line="459"/>
        <location filename="../app/gui/live/training_controller.cpp" line="571"/>
        <location filename="../app/gui/live/training_controller_events.cpp" line="58"/>
        <location filename="../app/gui/live/training_controller_events.cpp" line="68"/>
        <location filename="../app/gui/live/training_controller_events.cpp" line="141"/>
        <location filename="../app/gui/live/training_controller_events.cpp" line="181"/>
        <location filename="../app/gui/live/training_controller_events.cpp" line="194"/>
        <location filename="../app/gui/live/training_controller_events.cpp" line="207"/>
        <location filename="../app/gui/live/training_controller_export.cpp" line="34"/>
        <source>coordinator</source>
        <translation>协调器</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller_events.cpp" line="190"/>
        <source>%1 Re-planning, predicted %2x faster.</source>
        <translation>%1 正在重新规划，预计快 %2 倍。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller_events.cpp" line="191"/>
        <source>%1 A re-plan is predicted %2x faster.</source>
        <translation>%1 重新规划预计快 %2 倍。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller_events.cpp" line="192"/>
        <source>%1 No other plan is predicted to be faster.</source>
        <translation>%1 没有预计更快的其他计划。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="416"/>
        <source>Training was cancelled after step %1; deploy again to continue.</source>
        <translation>训练在第 %1 步后被取消；请重新部署以继续。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="431"/>
        <source>Training diverged at step %1 (%2): stopped; the workers went back to the weights of step %3.</source>
        <translation>训练在第 %1 步发散（%2）：已停止；工作节点已回到第 %3 步的权重。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="433"/>
        <source>the loss %1 is %2x its running level %3</source>
        <translation>损失 %1 是其滚动水平 %3 的 %2 倍</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="437"/>
        <source>the loss is not finite</source>
        <translation>损失不是有限值</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="452"/>
        <source>Deploy a plan before training.</source>
        <translation>请先部署计划再训练。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="453"/>
        <source>Cannot change the learning rate while %1.</source>
        <translation>%1时无法更改学习率。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="454"/>
        <source>The learning rate must be positive.</source>
        <translation>学习率必须为正数。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="460"/>
        <source>Training goes on at learning rate %1 from step %2.</source>
        <translation>训练以学习率 %1 从第 %2 步继续。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="471"/>
        <location filename="../app/gui/live/training_controller.cpp" line="526"/>
        <source>Deploy a plan before re-planning.</source>
        <translation>请先部署方案，再重新规划。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="472"/>
        <source>A re-plan is already being computed.</source>
        <translation>正在计算重新规划，请稍候。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="500"/>
        <source>Planner %1 found no plan that fits the live devices.</source>
        <translation>规划器 %1 找不到适合当前在线设备的方案。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="528"/>
        <source>Cannot re-plan while %1.</source>
        <translation>当前状态为“%1”，无法重新规划。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="563"/>
        <source>Moving the weights at step %1 to %2 workers.</source>
        <translation>正在将第 %1 步的权重迁移到 %2 个工作节点。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="570"/>
        <source>The new plan runs on %1 workers from step %2.</source>
        <translation>新方案从第 %2 步起在 %1 个工作节点上运行。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller.cpp" line="572"/>
        <source>Re-planned: %1 stages on %2 workers, continuing at step %3.</source>
        <translation>已重新规划：%2 个工作节点上的 %1 个阶段，从第 %3 步继续。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller_export.cpp" line="15"/>
        <source>Only a TorchScript model can be exported: open one with File → Open TorchScript Model…</source>
        <translation>只能导出 TorchScript 模型：请用“文件 → 打开 TorchScript 模型…”打开一个。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller_export.cpp" line="16"/>
        <source>Export when no step runs: stop training first.</source>
        <translation>请在没有训练步运行时导出：先停止训练。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller_export.cpp" line="34"/>
        <source>Exported the model trained to step %1 to %2.</source>
        <translation>已将训练到第 %1 步的模型导出到 %2。</translation>
    </message>
    <message>
        <location filename="../app/gui/live/training_controller_export.cpp" line="38"/>
        <source>Cannot export the model: %1</source>
        <translation>无法导出模型：%1</translation>
    </message>
</context>
<context>
    <name>stagecraft::gui::TrainingPanel</name>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="57"/>
        <source>&amp;Planner:</source>
        <translation>规划器(&amp;P)：</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="62"/>
        <source>Samples per training step, over all devices.</source>
        <translation>每个训练步的样本数（所有设备合计）。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="63"/>
        <source>&amp;Batch:</source>
        <translation>批次大小(&amp;B)：</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="67"/>
        <source>auto</source>
        <translation>自动</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="68"/>
        <source>Micro-batches per step; auto lets the planner choose a divisor of the batch.</source>
        <translation>每步的微批次数；选择“自动”时由规划器选取批次大小的一个约数。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="69"/>
        <source>&amp;Micro-batches:</source>
        <translation>微批次数(&amp;M)：</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="72"/>
        <source>1F1B</source>
        <translation>1F1B</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="73"/>
        <source>GPipe</source>
        <translation>GPipe</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="74"/>
        <source>&amp;Schedule:</source>
        <translation>调度(&amp;S)：</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="77"/>
        <source>SGD with momentum</source>
        <translation>带动量的 SGD</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="78"/>
        <source>Adam</source>
        <translation>Adam</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="79"/>
        <source>&amp;Optimizer:</source>
        <translation>优化器(&amp;O)：</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="86"/>
        <source>&amp;Learning rate:</source>
        <translation>学习率(&amp;L)：</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="91"/>
        <source>S&amp;teps:</source>
        <translation>步数(&amp;T)：</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="94"/>
        <source>Synthetic (learnable)</source>
        <translation>合成数据（可学习）</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="95"/>
        <source>MNIST (IDX files)</source>
        <translation>MNIST（IDX 文件）</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="145"/>
        <source>never</source>
        <translation>从不</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="146"/>
        <source> steps</source>
        <translation> 步</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="147"/>
        <source>Measure accuracy on held-out samples this often (a forward pass between steps); a tenth of a data set&apos;s files is then kept out of training.</source>
        <translation>按此间隔在留出样本上测量准确率（在训练步之间做一次前向计算）；此时数据集文件的十分之一不参与训练。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="149"/>
        <source>E&amp;valuate every:</source>
        <translation>评估间隔(&amp;V)：</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="281"/>
        <source>Choose the MNIST images file</source>
        <translation>选择 MNIST 图像文件</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="293"/>
        <source>The &amp;folder of the five batches…</source>
        <translation>五个批次文件所在的文件夹(&amp;F)…</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="294"/>
        <source>One &amp;batch file…</source>
        <translation>单个批次文件(&amp;B)…</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="297"/>
        <source>CIFAR-10 folder (data_batch_1.bin … data_batch_5.bin)</source>
        <translation>CIFAR-10 文件夹（data_batch_1.bin … data_batch_5.bin）</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="299"/>
        <source>CIFAR-10 batch file</source>
        <translation>CIFAR-10 批次文件</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="300"/>
        <source>CIFAR-10 batches (*.bin);;All files (*)</source>
        <translation>CIFAR-10 批次文件 (*.bin);;所有文件 (*)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="280"/>
        <location filename="../app/gui/window/training_panel.cpp" line="303"/>
        <source>MNIST images file</source>
        <translation>MNIST 图像文件</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="304"/>
        <source>IDX files (*-ubyte *.idx3-ubyte);;All files (*)</source>
        <translation>IDX 文件 (*-ubyte *.idx3-ubyte);;所有文件 (*)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="106"/>
        <source>&amp;Data:</source>
        <translation>数据(&amp;D)：</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="121"/>
        <location filename="../app/gui/window/training_panel.cpp" line="271"/>
        <source>Data folder:</source>
        <translation>数据文件夹：</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="272"/>
        <source>folder with a sub-folder of images per class</source>
        <translation>每个类别一个图像子文件夹</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="273"/>
        <source>Choose the image folder</source>
        <translation>选择图像文件夹</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="121"/>
        <location filename="../app/gui/window/training_panel.cpp" line="275"/>
        <source>Data file or folder:</source>
        <translation>数据文件或文件夹：</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="276"/>
        <source>batch file, or the folder of data_batch_*.bin</source>
        <translation>批次文件，或 data_batch_*.bin 所在的文件夹</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="277"/>
        <source>Choose the CIFAR-10 folder or one batch file</source>
        <translation>选择 CIFAR-10 文件夹或单个批次文件</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="116"/>
        <location filename="../app/gui/window/training_panel.cpp" line="121"/>
        <location filename="../app/gui/window/training_panel.cpp" line="279"/>
        <source>Data file:</source>
        <translation>数据文件：</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="96"/>
        <source>CIFAR-10 (batch file or folder)</source>
        <translation>CIFAR-10（批次文件或文件夹）</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="97"/>
        <location filename="../app/gui/window/training_panel.cpp" line="290"/>
        <source>Image folder (a sub-folder per class)</source>
        <translation>图像文件夹（每类一个子文件夹）</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="99"/>
        <source>One binary batch file, or the folder of the binary version whose data_batch_1.bin … data_batch_5.bin are read in order.</source>
        <translation>单个二进制批次文件，或二进制版本的文件夹，其中 data_batch_1.bin … data_batch_5.bin 依次读取。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="103"/>
        <source>A folder with one sub-folder of PNG or JPEG images per class (class ids in name order); every image must have the model&apos;s input size.</source>
        <translation>每个类别一个 PNG 或 JPEG 图像子文件夹的文件夹（类别编号按名称排序）；每张图像都必须与模型的输入尺寸一致。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="109"/>
        <source>As the workers see it: a relative path is read from their data folder. The console&apos;s local workers read data under your home folder (%1); other workers only inside their --data-dir.</source>
        <translation>按工作节点上的路径：相对路径从其数据目录读取。控制台的本地工作节点读取您主目录（%1）下的数据；其他工作节点只读取其 --data-dir 之内的数据。</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="127"/>
        <location filename="../app/gui/window/training_panel.cpp" line="133"/>
        <source>MNIST labels file</source>
        <translation>MNIST 标签文件</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="131"/>
        <source>Choose the MNIST labels file</source>
        <translation>选择 MNIST 标签文件</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="134"/>
        <source>IDX files (*-ubyte *.idx1-ubyte);;All files (*)</source>
        <translation>IDX 文件 (*-ubyte *.idx1-ubyte);;所有文件 (*)</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="137"/>
        <source>Labels file:</source>
        <translation>标签文件：</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="141"/>
        <source>S&amp;eed:</source>
        <translation>随机种子(&amp;E)：</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="150"/>
        <source>Profile the workers before deploying</source>
        <translation>部署前对工作节点进行性能剖析</translation>
    </message>
    <message>
        <location filename="../app/gui/window/training_panel.cpp" line="151"/>
        <source>Each worker times every layer first, so the predicted samples/s use measured speeds.</source>
        <translation>每个工作节点先测量每一层的耗时，使预测的样本/秒基于实测速度。</translation>
    </message>
</context>
</TS>

// Chain3 for the LangGraph.js reference server: three nodes in a row, each
// incrementing a number, the shape of bench's Chain3 graph. server.mjs
// registers its export `graph` (uncompiled: the server compiles it and
// gives it its in-memory checkpointer) under the graph ID "chain3".
import { Annotation, END, START, StateGraph } from "@langchain/langgraph";

const State = Annotation.Root({ n: Annotation() });
const incr = (s) => ({ n: s.n + 1 });

export const graph = new StateGraph(State)
  .addNode("n0", incr)
  .addNode("n1", incr)
  .addNode("n2", incr)
  .addEdge(START, "n0")
  .addEdge("n0", "n1")
  .addEdge("n1", "n2")
  .addEdge("n2", END);

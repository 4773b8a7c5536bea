// The ReAct shape for the LangGraph.js reference server: a scripted model
// that calls the echo tool once, the tool, and the model again, which then
// answers "done" — model → tool → model, the shape of bench's react graph
// on the Trellis side (bench/server_test.go). server.mjs registers its
// export `graph` under the graph ID "react".
import { AIMessage, ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import { ToolNode, toolsCondition } from "@langchain/langgraph/prebuilt";
import { z } from "zod";

const echo = tool(async ({ text }) => text, {
  name: "echo",
  description: "Repeats the text it is given.",
  schema: z.object({ text: z.string() }),
});

// The model's turn, decided from the conversation alone: a call to echo
// until the tool has answered, then "done".
function model(state) {
  const answered = state.messages.some((m) => ToolMessage.isInstance(m));
  if (answered) return { messages: [new AIMessage({ content: "done" })] };
  return {
    messages: [
      new AIMessage({ content: "", tool_calls: [{ id: "hop_1", name: "echo", args: { text: "hop 1" }, type: "tool_call" }] }),
    ],
  };
}

export const graph = new StateGraph(MessagesAnnotation)
  .addNode("model", model)
  .addNode("tools", new ToolNode([echo]))
  .addEdge(START, "model")
  .addConditionalEdges("model", toolsCondition, ["tools", END])
  .addEdge("tools", "model");
